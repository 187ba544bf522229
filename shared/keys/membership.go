package keys

import (
	"fmt"
	"time"
)

// Member is a user's membership of a group, a team or an organization:
// its role there, its own budget inside the group (LiteLLM's
// max_budget_in_team, max_budget_in_organization) with its spend, and the
// reusable budget it may link (Settings.BudgetID). Only the budget of its
// Settings is used.
type Member struct {
	Group   Kind   // KindTeam or KindOrg
	GroupID string // the team's or the organization's id
	UserID  string
	// Role is MemberAdmin or MemberUser in a team; OrgAdmin,
	// OrgInternalUser or OrgInternalUserViewer in an organization.
	Role      string
	Email     string // user_email the member was added with; a user AddMember creates gets it
	CreatedAt time.Time
	// UpdatedAt is kept for organization memberships only (LiteLLM's team
	// membership has none): the stores drop it from a team membership.
	UpdatedAt time.Time
	// AddedBy is who added it (a user id or "master_key"; "" when unknown:
	// added before it was recorded); CreatedAt is when (added_at).
	AddedBy string
	Settings
}

// groupKind is what differs between the kinds of groups users are members of.
type groupKind struct {
	member  Kind   // kind of its membership records
	noun    string // "team", "organization" in errors
	idParam string // "team_id", "organization_id"
	roles   []string
	updated bool // a membership keeps UpdatedAt
}

var groupKinds = map[Kind]groupKind{
	KindTeam: {KindMember, "team", "team_id", []string{MemberAdmin, MemberUser}, false},
	KindOrg:  {KindOrgMember, "organization", "organization_id", []string{OrgAdmin, OrgInternalUser, OrgInternalUserViewer}, true},
}

// Groups are the kinds of groups users are members of.
var Groups = []Kind{KindTeam, KindOrg}

// ValidRole reports whether role is a member role of the group kind g.
func ValidRole(g Kind, role string) bool {
	for _, r := range groupKinds[g].roles {
		if r == role {
			return true
		}
	}
	return false
}

// ValidOrgRole reports whether r is one of the organization member roles.
func ValidOrgRole(r string) bool { return ValidRole(KindOrg, r) }

// MemberRef is the spend record of the membership of user in the group
// g id: "member#<team>#<user>" or "orgmember#<org>#<user>".
func MemberRef(g Kind, id, user string) Ref {
	return Ref{groupKinds[g].member, MemberID(id, user)}
}

// Ref returns the spend record of the membership.
func (m Member) Ref() Ref { return MemberRef(m.Group, m.GroupID, m.UserID) }

// ValidMembership checks the ids of a membership of the group g id
// (ValidID, naming team_id or organization_id) and g itself.
func ValidMembership(g Kind, id, user string) error {
	k, ok := groupKinds[g]
	if !ok {
		return fmt.Errorf("%w: %q is not a kind of group (team, org)", ErrInvalid, g)
	}
	if err := ValidID(k.idParam, id); err != nil {
		return err
	}
	return ValidID("user_id", user)
}

// Validate checks m; its error wraps ErrInvalid.
func (m Member) Validate() error {
	if err := firstErr(ValidMembership(m.Group, m.GroupID, m.UserID), validText("user_email", m.Email, MaxNameLen), validText("added_by", m.AddedBy, MaxIDLen)); err != nil {
		return err
	}
	k := groupKinds[m.Group]
	if !ValidRole(m.Group, m.Role) {
		return invalid("role", "%q: want one of %v", m.Role, k.roles)
	}
	return m.Settings.validate(k.noun + " member " + m.Ref().ID)
}

// NoGroup is the error of a membership of a group that does not exist.
func NoGroup(g Kind, id string) error {
	return fmt.Errorf("%s %s: %w", groupKinds[g].noun, short(id), ErrNotFound)
}

// NoMember is the error of a membership that does not exist.
func NoMember(g Kind, id, user string) error {
	return fmt.Errorf("%s member %s: %w", groupKinds[g].noun, MemberID(id, user), ErrNotFound)
}

// MemberExists is the error of adding a member twice.
func MemberExists(g Kind, id, user string) error {
	return fmt.Errorf("%s member %s: %w", groupKinds[g].noun, MemberID(id, user), ErrExists)
}

// Stored returns m as the stores keep it: without UpdatedAt in a group
// whose memberships keep none.
func (m Member) Stored() Member {
	if !groupKinds[m.Group].updated {
		m.UpdatedAt = time.Time{}
	}
	return m
}

func (m *Member) ref() Ref             { return m.Ref() }
func (m *Member) settings() *Settings  { return &m.Settings }
func (m *Member) stamps() []*time.Time { return []*time.Time{&m.CreatedAt, &m.UpdatedAt} }
func (m *Member) own()                 {}
