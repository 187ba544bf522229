package adminapi

import (
	"context"
	"errors"
	"slices"

	"github.com/sluice-gw/sluice/shared/keys"
)

// The org_admin role: a user whose membership of organization O has the
// role org_admin manages O's teams (creates, changes, blocks and deletes
// them), their members and keys (teamRole counts it an admin of each of
// O's teams), and O's members; it reads O, its teams and their spend.
// It touches nothing outside O, and only a proxy admin creates, changes
// or deletes organizations themselves (LiteLLM).

// orgAdmin reports whether c is an org_admin of the organization org.
func (h *Handler) orgAdmin(ctx context.Context, c *caller, org string) (bool, error) {
	if c.userID == "" || org == "" || !c.holdsOrg(org) {
		return false, nil
	}
	o, ok, err := found(h.keys.GetOrganization(ctx, org))
	return ok && o.Role(c.userID) == keys.OrgAdmin, err
}

// adminOrgs returns the organizations user (c itself, for a caller that
// is no viewer) is an org_admin of; nil for a viewer, who lists by team
// membership only.
func (h *Handler) adminOrgs(ctx context.Context, c *caller, user string) ([]string, error) {
	if c.viewer() || user == "" {
		return nil, nil
	}
	u, _, err := found(h.keys.GetUser(ctx, user))
	if err != nil {
		return nil, err
	}
	return appendKept(nil, u.Organizations, func(org string) (bool, error) { return h.orgAdmin(ctx, c, org) })
}

// mayWriteTeamIn checks that c may create, change, block or delete a team
// of the organization org ("": of none): a proxy admin, or an org_admin
// of org.
func (h *Handler) mayWriteTeamIn(ctx context.Context, c *caller, org string) error {
	if c.admin() {
		return nil
	}
	admin, err := h.orgAdmin(ctx, c, org)
	switch {
	case err != nil:
		return err
	case admin:
		return nil
	case c.viewer():
		return needAdmin(c)
	case org == "":
		return forbidden("only a proxy_admin may write a team that belongs to no organization")
	}
	return forbidden("only a proxy_admin or an org_admin of organization %s may write its teams", org)
}

// guardTeam is the teams' guard: c must be allowed to write teams in the
// organization t is in (and in the one it leaves), and t must stay within
// its organization's models and max_budget, as LiteLLM checks them.
func (h *Handler) guardTeam(ctx context.Context, c *caller, old, t *keys.Team) error {
	moved := old == nil || old.OrganizationID != t.OrganizationID
	if err := h.mayWriteTeamIn(ctx, c, t.OrganizationID); err != nil {
		return err
	}
	if old != nil && moved {
		if err := h.mayWriteTeamIn(ctx, c, old.OrganizationID); err != nil {
			return err
		}
	}
	if t.OrganizationID == "" {
		return nil
	}
	o, err := h.keys.GetOrganization(ctx, t.OrganizationID)
	if errors.Is(err, keys.ErrNotFound) {
		return badParam("organization_id", "no organization %q: create it with /organization/new", t.OrganizationID)
	}
	if err != nil {
		return err
	}
	if moved || !slices.Equal(old.Models, t.Models) {
		if err := withinOrgModels(o, t.Models); err != nil {
			return err
		}
	}
	if (moved || !sameUSD(old.MaxBudget, t.MaxBudget)) && t.MaxBudget != nil && o.MaxBudget != nil && *t.MaxBudget > *o.MaxBudget {
		return badParam("max_budget", "Team max_budget (%v) exceeds organization's max_budget (%v)", *t.MaxBudget, *o.MaxBudget)
	}
	// LiteLLM: a team moved into an organization by someone other than a
	// proxy admin may bring no one who is not a member of it already.
	if old != nil && moved && !c.admin() {
		for _, m := range t.Members {
			if o.Role(m.UserID) == "" {
				return forbidden("Cannot move team to organization. Team has user_id %s that is not a member of the organization.", m.UserID)
			}
		}
	}
	return nil
}

// withinOrgModels refuses a model the organization o may not call (o's
// models empty, or naming all proxy models: every model).
func withinOrgModels(o keys.Organization, models []string) error {
	if len(o.Models) == 0 || slices.Contains(o.Models, "*") || slices.Contains(o.Models, "all-proxy-models") {
		return nil
	}
	for _, m := range models {
		if !slices.Contains(o.Models, m) {
			return badParam("models", "Organization=%s not allowed to access model=%s. Organization allowed models=%v", o.ID, m, o.Models)
		}
	}
	return nil
}

func sameUSD(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// mayManageOrg checks that c may add, change or remove members of o: a
// proxy admin, or an org_admin of o.
func mayManageOrg(c *caller, o keys.Organization) error {
	switch {
	case !c.holdsOrg(o.ID):
		return outOfScope(c, "organization "+o.ID)
	case c.admin():
		return nil
	case c.userID != "" && o.Role(c.userID) == keys.OrgAdmin:
		return nil
	case c.viewer():
		return needAdmin(c)
	}
	return forbidden("only a proxy_admin or an org_admin of organization %s may manage its members", o.ID)
}

// mayReadOrg allows viewers and o's members.
func mayReadOrg(c *caller, o keys.Organization) error {
	if !c.holdsOrg(o.ID) {
		return outOfScope(c, "organization "+o.ID)
	}
	if c.viewer() || (c.userID != "" && o.Role(c.userID) != "") {
		return nil
	}
	return forbidden("you are not a member of organization %s", o.ID)
}

// notOwnOrgMembership refuses an org admin's change of its own membership
// (its role, its max_budget_in_organization, leaving), as
// notOwnMembership does for team admins: only a proxy admin may.
func notOwnOrgMembership(c *caller, org, user string) error {
	if c.admin() || c.userID == "" || user != c.userID {
		return nil
	}
	return forbidden("you may not change or leave your own membership of organization %s (role, max_budget_in_organization): only a proxy_admin may", org)
}
