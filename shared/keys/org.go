package keys

import (
	"fmt"
	"slices"
	"time"
)

// Organization groups teams under shared models, limits and budget
// (LiteLLM's organization): an organization's teams are the teams whose
// OrganizationID names it, its members users with an organization role.
type Organization struct {
	ID    string // organization_id
	Alias string // organization_alias
	// Teams are the ids of the teams in the organization, sorted; kept by
	// the team writes (CreateTeam, UpdateTeam, Delete of a team) in the
	// same write as the team, so that an organization with teams cannot
	// be deleted and a team cannot join a deleted organization.
	Teams     []string
	Members   []OrgMember // changed only by AddOrgMember, UpdateOrgMember and RemoveOrgMember
	CreatedAt time.Time
	UpdatedAt time.Time
	CreatedBy string // who created it: a user id or "master_key"
	UpdatedBy string
	Settings
}

// OrgMember is one entry of an organization's member list: the same
// shape as a team's (its Role is one of the Org* roles).
type OrgMember = TeamMember

// Organization member roles, as LiteLLM names them.
const (
	OrgAdmin              = "org_admin"            // manages the organization's teams, members and keys
	OrgInternalUser       = "internal_user"        // a member
	OrgInternalUserViewer = "internal_user_viewer" // a member that reads
)

// ValidOrgRole reports whether r is one of the organization member roles.
func ValidOrgRole(r string) bool {
	return r == OrgAdmin || r == OrgInternalUser || r == OrgInternalUserViewer
}

// OrgMembership is a user's membership of an organization: its role there
// and its own budget inside it (LiteLLM's max_budget_in_organization).
type OrgMembership struct {
	OrgID     string
	UserID    string
	Role      string // OrgAdmin, OrgInternalUser or OrgInternalUserViewer
	Email     string // user_email the member was added with; a user AddOrgMember creates gets it
	CreatedAt time.Time
	UpdatedAt time.Time
	// AddedBy is who added it (a user id or "master_key"; "" when unknown);
	// CreatedAt is when (added_at).
	AddedBy string
	Settings
}

// OrgMemberID is the id of a user's membership of an organization.
func OrgMemberID(org, user string) string { return org + "#" + user }

// Ref returns the spend record of the membership.
func (m OrgMembership) Ref() Ref { return Ref{KindOrgMember, OrgMemberID(m.OrgID, m.UserID)} }

// ErrOrgHasTeams is the error of deleting an organization that still has
// teams (LiteLLM refuses it too); it wraps ErrInvalid.
var ErrOrgHasTeams = fmt.Errorf("%w: the organization still has teams: delete them or move them to another organization first", ErrInvalid)

// NoOrganization is the error of a team that names an organization that
// does not exist: ErrInvalid naming organization_id.
func NoOrganization(id string) error {
	return invalid("organization_id", "no organization %q", short(id))
}

// ValidOrgID checks an organization id (ValidID).
func ValidOrgID(id string) error { return ValidID("organization_id", id) }

// ValidOrgMember checks the ids of an organization membership (ValidID).
func ValidOrgMember(org, user string) error {
	if err := ValidOrgID(org); err != nil {
		return err
	}
	return ValidID("user_id", user)
}

// Role returns the role of user in the organization, "" if it is not a member.
func (o Organization) Role(user string) string {
	for _, m := range o.Members {
		if m.UserID == user {
			return m.Role
		}
	}
	return ""
}

// Validate checks o; its error wraps ErrInvalid.
func (o Organization) Validate() error {
	if err := firstErr(ValidOrgID(o.ID), validText("organization_alias", o.Alias, MaxIDLen), optionalID("budget_id", o.BudgetID),
		validText("created_by", o.CreatedBy, MaxIDLen), validText("updated_by", o.UpdatedBy, MaxIDLen)); err != nil {
		return err
	}
	return o.Settings.validate("organization " + short(o.ID))
}

// Validate checks m; its error wraps ErrInvalid.
func (m OrgMembership) Validate() error {
	if err := firstErr(ValidOrgMember(m.OrgID, m.UserID), validText("user_email", m.Email, MaxNameLen), validText("added_by", m.AddedBy, MaxIDLen)); err != nil {
		return err
	}
	if !ValidOrgRole(m.Role) {
		return invalid("role", "%q: want org_admin, internal_user or internal_user_viewer", m.Role)
	}
	return m.Settings.validate("organization member " + OrgMemberID(m.OrgID, m.UserID))
}

func (o *Organization) ref() Ref             { return Ref{KindOrg, o.ID} }
func (o *Organization) settings() *Settings  { return &o.Settings }
func (o *Organization) stamps() []*time.Time { return []*time.Time{&o.CreatedAt, &o.UpdatedAt} }
func (o *Organization) own() {
	o.Teams, o.Members = slices.Clone(o.Teams), slices.Clone(o.Members)
}
func (m *OrgMembership) ref() Ref             { return m.Ref() }
func (m *OrgMembership) settings() *Settings  { return &m.Settings }
func (m *OrgMembership) stamps() []*time.Time { return []*time.Time{&m.CreatedAt, &m.UpdatedAt} }
func (m *OrgMembership) own()                 {}
