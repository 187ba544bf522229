package adminapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// newID returns a random UUID-shaped id (team and user ids LiteLLM
// generates when none is given).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func notFound(param, format string, args ...any) *apierr.Error {
	return apierr.NewParam(apierr.NotFound, param, format, args...)
}

// memberSpec is one member of a member_add or team/new body.
type memberSpec struct {
	Role      string `json:"role"`
	UserID    string `json:"user_id"`
	UserEmail string `json:"user_email"`
}

// readMembers reads a list of team members (or one, for member_add's
// "member").
func readMembers(p *params, name string) ([]memberSpec, bool) {
	return readRoles(p, name, teamRoles)
}

// memberRoles are the roles of one kind of membership: the default role
// and the valid ones.
type memberRoles struct {
	def   string
	valid func(string) bool
	want  string // in errors
}

var teamRoles = memberRoles{keys.MemberUser, func(r string) bool { return r == keys.MemberAdmin || r == keys.MemberUser }, "admin or user"}

// readRoles reads a list of members (or one) with roles.
func readRoles(p *params, name string, roles memberRoles) ([]memberSpec, bool) {
	v, ok := p.raw(name)
	if !ok {
		return nil, false
	}
	var list []memberSpec
	if err := json.Unmarshal(v, &list); err != nil {
		var one memberSpec
		if err := json.Unmarshal(v, &one); err != nil {
			p.fail(badParam(name, "want a member {role, user_id, user_email} or a list of them"))
			return nil, false
		}
		list = []memberSpec{one}
	}
	for i, m := range list {
		if m.Role == "" {
			list[i].Role = roles.def
		}
		if !roles.valid(list[i].Role) {
			p.fail(badParam(name, "role %q: want %s", m.Role, roles.want))
			return nil, false
		}
		if m.UserID == "" && m.UserEmail == "" {
			p.fail(badParam(name, "each member needs a user_id or a user_email"))
			return nil, false
		}
		if m.UserID != "" {
			if err := keys.ValidID("user_id", m.UserID); err != nil {
				p.fail(badParam(name, "%v", err))
				return nil, false
			}
		}
	}
	return list, true
}

// resolveMember finds the user id of a member given by email (creating
// the user when none has it, as LiteLLM does).
func (h *Handler) resolveMember(ctx context.Context, m memberSpec) (string, error) {
	if m.UserID != "" {
		return m.UserID, nil
	}
	us, err := h.keys.Users().List(ctx)
	if err != nil {
		return "", err
	}
	for _, u := range us {
		if u.Email == m.UserEmail {
			return u.ID, nil
		}
	}
	id := newID()
	now := h.now()
	return id, h.keys.Users().Create(ctx, keys.User{ID: id, Email: m.UserEmail, Role: keys.RoleInternalUser, CreatedAt: now, UpdatedAt: now})
}

func (h *Handler) loadTeam(ctx context.Context, id string) (keys.Team, error) {
	return teams.load(h, ctx, "team_id", id)
}

// managedTeam reads team id for a caller who may manage it (a proxy
// admin, an admin of the team, an org admin of its organization).
func (h *Handler) managedTeam(ctx context.Context, c *caller, id string) (keys.Team, error) {
	t, err := h.loadTeam(ctx, id)
	if err != nil {
		return keys.Team{}, err
	}
	return t, h.mayManageTeam(ctx, c, id)
}

// mayManageTeam allows a proxy admin, or an admin of the team.
func (h *Handler) mayManageTeam(ctx context.Context, c *caller, team string) error {
	if c.admin() {
		return nil
	}
	role, err := h.teamRole(ctx, c, team)
	if err != nil || role == keys.MemberAdmin {
		return err
	}
	return needAdmin(c)
}

func (h *Handler) teamNew(w http.ResponseWriter, r *http.Request, c *caller) error {
	var members []memberSpec
	var admins, plain []string
	id, pt, err := teams.decode(r, c, func(p *params) {
		members, _ = readMembers(p, "members_with_roles")
		admins, _ = p.strs("admins")
		plain, _ = p.strs("members")
	})
	if err != nil {
		return err
	}
	now := h.now()
	t := keys.Team{ID: id, CreatedAt: now, UpdatedAt: now}
	pt.apply(&t, &t.Settings)
	for _, a := range admins {
		members = append(members, memberSpec{Role: keys.MemberAdmin, UserID: a})
	}
	for _, u := range plain {
		members = append(members, memberSpec{Role: keys.MemberUser, UserID: u})
	}
	members = withCreator(members, c)
	if t.ID == "" {
		t.ID = newID()
	}
	ctx := r.Context()
	if err := teams.guard(h, ctx, c, nil, &t); err != nil {
		return err
	}
	t, err = teams.created(h, ctx, t.ID, t, func() error {
		for _, m := range members {
			id, err := h.resolveMember(ctx, m)
			if err != nil {
				return err
			}
			if err := h.keys.AddMember(ctx, keys.Member{Group: keys.KindTeam, GroupID: t.ID, UserID: id, Role: m.Role, Email: m.UserEmail, CreatedAt: now, AddedBy: c.name()}); err != nil && !errors.Is(err, keys.ErrExists) {
				return err
			}
			h.added(ctx, c, "team", t.ID, id, m.Role)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(w, teamObject(t, now))
}

func (h *Handler) teamUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	return teams.updateAndShow(h, w, r, c, nil, func(t keys.Team) obj { return obj{"team_id": t.ID, "data": teamObject(t, h.now())} })
}

// teamDelete deletes teams, their keys (kept as deleted-key audit copies)
// and their memberships.
func (h *Handler) teamDelete(w http.ResponseWriter, r *http.Request, c *caller) error {
	ids, err := h.scopedIDs(r, "team_ids", func(ctx context.Context, id string) error {
		t, err := h.loadTeam(ctx, id)
		if e := apierr.From(err); err != nil && e.Kind == apierr.NotFound {
			e.Param = "team_ids"
		}
		if err != nil {
			return err
		}
		return h.mayWriteTeamIn(ctx, c, t.OrganizationID)
	})
	if err != nil {
		return err
	}
	deletedKeys, err := h.deleteOwned(r.Context(), c, keys.KindTeam, ids)
	if err != nil {
		return err
	}
	return ok(w, obj{"deleted_teams": ids, "deleted_keys": deletedKeys})
}

func (h *Handler) teamMemberAdd(w http.ResponseWriter, r *http.Request, c *caller) error {
	a, err := teamMembers.readAdd(h, r, c)
	if err != nil {
		return err
	}
	ctx := r.Context()
	users, memberships, err := teamMembers.add(h, ctx, c, a)
	if err != nil {
		return err
	}
	t, err := h.keys.GetTeam(ctx, a.id)
	if err != nil {
		return err
	}
	o := teamObject(t, h.now())
	o["updated_users"], o["updated_team_memberships"] = users, memberships
	return ok(w, o)
}

func (h *Handler) userByEmail(ctx context.Context, email string) (string, error) {
	if email == "" {
		return "", badParam("user_id", "give user_id or user_email")
	}
	us, err := h.keys.Users().List(ctx)
	if err != nil {
		return "", err
	}
	for _, u := range us {
		if u.Email == email {
			return u.ID, nil
		}
	}
	return "", notFound("user_email", "no user with this user_email")
}

func (h *Handler) teamBlock(w http.ResponseWriter, r *http.Request, c *caller) error {
	return h.setTeamBlocked(w, r, c, true)
}

func (h *Handler) teamUnblock(w http.ResponseWriter, r *http.Request, c *caller) error {
	return h.setTeamBlocked(w, r, c, false)
}

func (h *Handler) setTeamBlocked(w http.ResponseWriter, r *http.Request, c *caller, blocked bool) error {
	if !c.admin() && c.userID == "" {
		return needAdmin(c)
	}
	id, err := readParam(r, "team_id")
	if err != nil {
		return err
	}
	t, err := h.loadTeam(r.Context(), id)
	if err != nil {
		return err
	}
	if err := h.mayWriteTeamIn(r.Context(), c, t.OrganizationID); err != nil {
		return err
	}
	if err := h.keys.Block(r.Context(), keys.Ref{Kind: keys.KindTeam, ID: id}, blocked); err != nil {
		return err
	}
	if t, err = h.keys.GetTeam(r.Context(), id); err != nil {
		return err
	}
	return ok(w, teamObject(t, h.now()))
}

// mayReadTeam allows viewers, the team's members and the org_admins of
// its organization.
func (h *Handler) mayReadTeam(ctx context.Context, c *caller, t keys.Team) error {
	if !c.holdsTeam(t) {
		return outOfScope(c, "team "+t.ID)
	}
	if c.viewer() || (c.userID != "" && t.Role(c.userID) != "") || (c.key != nil && c.key.TeamID == t.ID) {
		return nil
	}
	if admin, err := h.orgAdmin(ctx, c, t.OrganizationID); err != nil || admin {
		return err
	}
	return forbidden("you are not a member of team %s", t.ID)
}

func (h *Handler) teamInfo(w http.ResponseWriter, r *http.Request, c *caller) error {
	q := &query{r: r}
	id := q.str("team_id")
	if id == "" && c.key != nil {
		id = c.key.TeamID
	}
	ctx := r.Context()
	t, err := h.loadTeam(ctx, id)
	if err != nil {
		return err
	}
	if err := h.mayReadTeam(ctx, c, t); err != nil {
		return err
	}
	now := h.now()
	ks, err := h.keys.ListKeys(ctx, keys.KeyFilter{TeamID: id})
	if err != nil {
		return err
	}
	keyObjs := []obj{}
	for _, k := range ks {
		keyObjs = append(keyObjs, keyObject(k, now))
	}
	memberships := []obj{}
	for _, m := range t.Members {
		if mb, err := h.keys.GetMember(ctx, keys.KindTeam, id, m.UserID); err == nil {
			if mb.Settings, err = h.shown(ctx, mb.Settings); err != nil {
				return err
			}
			memberships = append(memberships, membershipObject(mb, now))
		}
	}
	return ok(w, obj{"team_id": id, "team_info": teamObject(t, now), "keys": keyObjs, "team_memberships": memberships})
}

func (h *Handler) teamList(w http.ResponseWriter, r *http.Request, c *caller) error {
	q := &query{r: r}
	user := q.str("user_id")
	if !c.viewer() {
		if c.userID == "" {
			return forbidden("a key that belongs to no user may not list teams")
		}
		if user != "" && user != c.userID {
			return forbidden("you may list only your own teams")
		}
		user = c.userID
	}
	ts, err := h.keys.Teams().List(r.Context())
	if err != nil {
		return err
	}
	managed, err := h.adminOrgs(r.Context(), c, user)
	if err != nil {
		return err
	}
	ts = slices.DeleteFunc(ts, func(t keys.Team) bool {
		return !c.holdsTeam(t) || (user != "" && t.Role(user) == "" && !slices.Contains(managed, t.OrganizationID))
	})
	return ok(w, objectsAt(ts, h.now(), teamObject))
}

// withCreator adds the caller to a new team's members as an admin, as
// LiteLLM's /team/new does for a caller with a user id, unless the body
// lists it already. The master key is no user: it is added to nothing
// (LiteLLM adds its placeholder user default_user_id).
func withCreator(members []memberSpec, c *caller) []memberSpec {
	if c.userID == "" || slices.ContainsFunc(members, func(m memberSpec) bool { return m.UserID == c.userID }) {
		return members
	}
	return append(members, memberSpec{Role: keys.MemberAdmin, UserID: c.userID})
}

// teamJoin is a team a new user joins: an entry of /user/new's teams, a
// team id or LiteLLM's {"team_id", "user_role", "max_budget_in_team"}.
type teamJoin struct {
	TeamID string   `json:"team_id"`
	Role   string   `json:"user_role"`
	Budget *float64 `json:"max_budget_in_team"`
}

// teamJoins reads the list name of teamJoin entries.
func (p *params) teamJoins(name string) []teamJoin {
	v, ok := p.raw(name)
	if !ok {
		return nil
	}
	bad := func(format string, args ...any) []teamJoin {
		p.fail(badParam(name, format, args...))
		return nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(v, &entries); err != nil {
		return bad(`want a list of team ids or of {"team_id", "user_role", "max_budget_in_team"}`)
	}
	out := make([]teamJoin, 0, len(entries))
	for _, e := range entries {
		var j teamJoin
		if err := json.Unmarshal(e, &j.TeamID); err != nil {
			dec := json.NewDecoder(bytes.NewReader(e))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&j); err != nil {
				return bad(`want a team id or {"team_id", "user_role", "max_budget_in_team"}: %v`, err)
			}
		}
		if err := keys.ValidID(name, j.TeamID); err != nil {
			p.fail(apierr.Store(err))
			return nil
		}
		switch j.Role {
		case "":
			j.Role = keys.MemberUser
		case keys.MemberUser, keys.MemberAdmin:
		default:
			return bad("user_role %q: want user or admin", j.Role)
		}
		if b := j.Budget; b != nil && (*b < 0 || *b > maxUSD || (*b > 0 && *b < minUSD)) {
			return bad("max_budget_in_team: want 0 or a number of USD from 0.000000001 to 1e15, got %v", *b)
		}
		out = append(out, j)
	}
	return out
}
