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
	// the team writes (Teams().Create and Update, Delete of a team) in the
	// same write as the team, so that an organization with teams cannot
	// be deleted and a team cannot join a deleted organization.
	Teams     []string
	Members   []TeamMember // changed only by AddMember, UpdateMember and RemoveMember
	CreatedAt time.Time
	UpdatedAt time.Time
	CreatedBy string // who created it: a user id or "master_key"
	UpdatedBy string
	Settings
}

// Organization member roles, as LiteLLM names them.
const (
	OrgAdmin              = "org_admin"            // manages the organization's teams, members and keys
	OrgInternalUser       = "internal_user"        // a member
	OrgInternalUserViewer = "internal_user_viewer" // a member that reads
)

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

func (o *Organization) ref() Ref             { return Ref{KindOrg, o.ID} }
func (o *Organization) settings() *Settings  { return &o.Settings }
func (o *Organization) stamps() []*time.Time { return []*time.Time{&o.CreatedAt, &o.UpdatedAt} }
func (o *Organization) own() {
	o.Teams, o.Members = slices.Clone(o.Teams), slices.Clone(o.Members)
}
