package adminapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// groupMembers is how the member routes (member_add, member_update,
// member_delete) handle the memberships of one kind of group: a team or
// an organization (keys.Member).
type groupMembers struct {
	kind        keys.Kind
	noun        string // "team", "organization" in messages
	idParam     string // "team_id", "organization_id"
	budgetParam string // the member's own max_budget in the body
	linksBudget bool   // the body may set budget_id
	roles       memberRoles
	// manage loads the group id (a 404 naming idParam) and checks that c
	// may manage its members.
	manage func(h *Handler, ctx context.Context, c *caller, id string) error
	// notOwn refuses c's change of its own membership of the group id.
	notOwn func(c *caller, id, user string) error
	// missing is the answer to a membership that does not exist.
	missing func(id, user string) error
	show    func(m keys.Member, now time.Time) obj
}

var (
	teamMembers = groupMembers{kind: keys.KindTeam, noun: "team", idParam: "team_id", budgetParam: "max_budget_in_team", linksBudget: true, roles: teamRoles,
		manage: func(h *Handler, ctx context.Context, c *caller, id string) error {
			_, err := h.managedTeam(ctx, c, id)
			return err
		},
		notOwn: notOwnMembership,
		missing: func(id, user string) error {
			return notFound("user_id", "user %s is not a member of team %s", user, id)
		},
		show: membershipObject}
	orgMembers = groupMembers{kind: keys.KindOrg, noun: "organization", idParam: "organization_id", budgetParam: "max_budget_in_organization", roles: orgRoles,
		manage: func(h *Handler, ctx context.Context, c *caller, id string) error {
			o, err := h.loadOrg(ctx, "organization_id", id)
			if err != nil {
				return err
			}
			return mayManageOrg(c, o)
		},
		notOwn: notOwnOrgMembership,
		missing: func(_, user string) error {
			return notFound("user_id", "Member not found in organization for user_id=%s", user)
		},
		show: orgMembershipObject}
)

// memberAdd is the body of a member_add: the group (idParam), its
// members with their role, and their budget (budgetParam, or a linked
// budget_id where the group kind takes one).
type memberAdd struct {
	id      string
	members []memberSpec
	link    keys.Settings // each membership's settings
}

// readAdd reads a member_add body and checks that c may manage the group.
func (gm groupMembers) readAdd(h *Handler, r *http.Request, c *caller) (memberAdd, error) {
	p, err := readParams(r)
	if err != nil {
		return memberAdd{}, err
	}
	var a memberAdd
	a.id, _ = p.str(gm.idParam)
	a.members, _ = readRoles(p, "member", gm.roles)
	a.link.MaxBudget, _ = p.money(gm.budgetParam)
	if gm.linksBudget {
		a.link.BudgetID, _ = p.str("budget_id")
	}
	if err := p.done(); err != nil {
		return memberAdd{}, err
	}
	if len(a.members) == 0 {
		return memberAdd{}, badParam("member", "required")
	}
	if a.link.BudgetID != "" && a.link.MaxBudget != nil {
		return memberAdd{}, badParam("budget_id", "Set either '%s' or 'budget_id', not both.", gm.budgetParam)
	}
	ctx := r.Context()
	if err := gm.manage(h, ctx, c, a.id); err != nil {
		return memberAdd{}, err
	}
	return a, h.linkBudget(ctx, c, "", &a.link)
}

// add writes the memberships of a, answering the users and the
// memberships as stored.
func (gm groupMembers) add(h *Handler, ctx context.Context, c *caller, a memberAdd) (users, memberships []obj, err error) {
	now := h.now()
	users, memberships = []obj{}, []obj{}
	for _, m := range a.members {
		uid, err := h.resolveMember(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		if err := gm.notOwn(c, a.id, uid); err != nil {
			return nil, nil, err
		}
		mb := keys.Member{Group: gm.kind, GroupID: a.id, UserID: uid, Role: m.Role, Email: m.UserEmail, CreatedAt: now, UpdatedAt: now, AddedBy: c.name(), Settings: a.link}
		if err := h.keys.AddMember(ctx, mb); err != nil {
			if errors.Is(err, keys.ErrExists) {
				return nil, nil, apierr.Taken("member", "member", "user %s is already a member of %s %s", uid, gm.noun, a.id)
			}
			return nil, nil, err
		}
		h.added(ctx, c, gm.noun, a.id, uid, m.Role)
		if u, err := h.keys.GetUser(ctx, uid); err == nil {
			users = append(users, userObject(u, now))
		}
		if got, err := h.keys.GetMember(ctx, gm.kind, a.id, uid); err == nil {
			if got.Settings, err = h.shown(ctx, got.Settings); err != nil {
				return nil, nil, err
			}
			memberships = append(memberships, gm.show(got, now))
		}
	}
	return users, memberships, nil
}

// load reads the membership a member_update or member_delete body names
// (idParam, and user_id or user_email), with what more reads, and checks
// that c may manage it.
func (gm groupMembers) load(h *Handler, r *http.Request, c *caller, more func(p *params)) (keys.Member, error) {
	p, err := readParams(r)
	if err != nil {
		return keys.Member{}, err
	}
	id, _ := p.str(gm.idParam)
	user, _ := p.str("user_id")
	email, _ := p.str("user_email")
	if more != nil {
		more(p)
	}
	if err := p.done(); err != nil {
		return keys.Member{}, err
	}
	ctx := r.Context()
	if err := gm.manage(h, ctx, c, id); err != nil {
		return keys.Member{}, err
	}
	if user == "" {
		if user, err = h.userByEmail(ctx, email); err != nil {
			return keys.Member{}, err
		}
	}
	if err := gm.notOwn(c, id, user); err != nil {
		return keys.Member{}, err
	}
	m, err := h.keys.GetMember(ctx, gm.kind, id, user)
	if errors.Is(err, keys.ErrNotFound) {
		return m, gm.missing(id, user)
	}
	return m, err
}

// update is a member_update route: a member's role, its own budget
// (budgetParam) or its linked budget_id.
func (gm groupMembers) update(h *Handler, w http.ResponseWriter, r *http.Request, c *caller) error {
	var role, budgetID string
	var hasRole, hasBudget, hasBudgetID bool
	var budget *float64
	m, err := gm.load(h, r, c, func(p *params) {
		role, hasRole = p.str("role")
		budget, hasBudget = p.money(gm.budgetParam)
		if gm.linksBudget {
			budgetID, hasBudgetID = p.str("budget_id")
			hasBudgetID = hasBudgetID || p.has("budget_id")
		}
	})
	if err != nil {
		return err
	}
	ctx := r.Context()
	if hasRole {
		if !gm.roles.valid(role) {
			return badParam("role", "want %s, got %q", gm.roles.want, role)
		}
		m.Role = role
	}
	if hasBudget {
		m.MaxBudget = budget
	}
	if hasBudgetID {
		was := m.BudgetID
		m.BudgetID = budgetID
		if err := h.linkBudget(ctx, c, was, &m.Settings); err != nil {
			return err
		}
	}
	m.UpdatedAt = h.now()
	if m, err = h.keys.UpdateMember(ctx, m); err != nil {
		return err
	}
	if m.Settings, err = h.shown(ctx, m.Settings); err != nil {
		return err
	}
	return ok(w, gm.show(m, h.now()))
}

func (h *Handler) teamMemberUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	return teamMembers.update(h, w, r, c)
}

func (h *Handler) orgMemberUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	return orgMembers.update(h, w, r, c)
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
	t, err := h.managedTeam(ctx, c, team)
	if err != nil {
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
