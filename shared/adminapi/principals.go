package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// What LiteLLM's user and team routes do to principals beyond their
// settings: a user's spend set by /user/new and /user/update, a team's
// creator made its admin, a member removed by id or email.

// setUserSpend sets the user's spend when the body gave one (LiteLLM's
// spend field, which scripts send as 0 to reset a user's spend).
func (h *Handler) setUserSpend(ctx context.Context, id string, spend *float64) error {
	if spend == nil {
		return nil
	}
	return h.keys.SetSpend(ctx, keys.Ref{Kind: keys.KindUser, ID: id}, keys.Nanos(*spend), h.now())
}

// userUpdate is /user/update: the user named by user_id (or found by
// user_email) gets the body's settings and, when the body has spend, that
// spend.
func (h *Handler) userUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	var spend *float64
	id, pt, err := users.decode(r, c, func(p *params) { spend, _ = p.money("spend") })
	if err != nil {
		return err
	}
	ctx := r.Context()
	if id == "" && pt.email != "" {
		if id, err = h.userByEmail(ctx, pt.email); err != nil {
			return err
		}
	}
	u, err := users.load(h, ctx, "user_id", id)
	if err != nil {
		return err
	}
	pt.apply(&u, &u.Settings)
	u.UpdatedAt = h.now()
	if u, err = h.keys.Users().Update(ctx, u); err != nil {
		return err
	}
	if spend != nil {
		if err := h.setUserSpend(ctx, u.ID, spend); err != nil {
			return err
		}
		if u, err = h.keys.GetUser(ctx, u.ID); err != nil {
			return err
		}
	}
	return ok(w, obj{"user_id": u.ID, "data": userObject(u, h.now())})
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

// notInTeam is LiteLLM's answer to removing a user who is not a member:
// 400 "User not found in team".
func notInTeam(user, team string) *apierr.Error {
	return apierr.NewParam(apierr.InvalidRequest, "user_id", "User not found in team: %s is not a member of team %s", user, team)
}

// teamMemberDelete is /team/member_delete: the member named by user_id,
// or by the user_email it was added with (or its user's email).
func (h *Handler) teamMemberDelete(w http.ResponseWriter, r *http.Request, c *caller) error {
	p, err := readParams(r)
	if err != nil {
		return err
	}
	team, _ := p.str("team_id")
	user, _ := p.str("user_id")
	email, _ := p.str("user_email")
	if err := p.done(); err != nil {
		return err
	}
	if user == "" && email == "" {
		return badParam("user_id", "give user_id or user_email")
	}
	ctx := r.Context()
	t, err := h.loadTeam(ctx, team)
	if err != nil {
		return err
	}
	if err := h.mayManageTeam(ctx, c, team); err != nil {
		return err
	}
	who := user
	if who == "" {
		who = email
	}
	uid, err := h.memberOf(ctx, t, user, email)
	if err != nil {
		return err
	}
	if uid == "" {
		return notInTeam(who, team)
	}
	if err := notOwnMembership(c, team, uid); err != nil {
		return err // leaving would drop its own max_budget_in_team from its team keys
	}
	if err := h.keys.RemoveMember(ctx, keys.KindTeam, team, uid); err != nil {
		if errors.Is(err, keys.ErrNotFound) {
			return notInTeam(who, team)
		}
		return err
	}
	if t, err = h.keys.GetTeam(ctx, team); err != nil {
		return err
	}
	return ok(w, teamObject(t, h.now()))
}

// memberOf returns the user id of t's member with this id, or else with
// this email (the one it was added with, or its user's); "" if none.
func (h *Handler) memberOf(ctx context.Context, t keys.Team, user, email string) (string, error) {
	if user != "" {
		if t.Role(user) != "" {
			return user, nil
		}
		return "", nil
	}
	for _, m := range t.Members {
		if m.Email == email {
			return m.UserID, nil
		}
	}
	us, err := h.keys.Users().List(ctx)
	if err != nil {
		return "", err
	}
	for _, u := range us {
		if u.Email == email && t.Role(u.ID) != "" {
			return u.ID, nil
		}
	}
	return "", nil
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
