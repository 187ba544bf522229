package adminapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// LiteLLM's /organization routes. An organization carries its own budget
// and limits (LiteLLM keeps them in a budget row its budget_id links;
// here the organization carries them itself, and a budget_id links a
// reusable budget (/budget/new) whose limits then apply in its place, as
// for end users and memberships; litellm_budget_table shows the
// organization's own budget).

// orgs is how the shared flows handle organizations: proxy admins only.
var orgs = record[keys.Organization]{noun: "organization", idParam: "organization_id", parse: orgPatch,
	get: keys.Admin.GetOrganization, writes: keys.Admin.Organizations,
	settings: func(o *keys.Organization) *keys.Settings { return &o.Settings },
	stamp:    func(o *keys.Organization, now time.Time, by string) { o.UpdatedAt, o.UpdatedBy = now, by }}

// orgRoles are the roles of organization members.
var orgRoles = memberRoles{"", keys.ValidOrgRole, "org_admin, internal_user or internal_user_viewer"}

// whyOrgField refuses what an organization does not apply.
const whyOrgField = "an organization applies its models, budget, rpm/tpm limits and blocked flag only"

// orgPatch reads the settings of an organization (NewOrganizationRequest,
// UpdateOrganizationRequest).
func orgPatch(p *params) patch[keys.Organization] {
	pt := aliasedPatch(p, "organization_alias", func(o *keys.Organization) *string { return &o.Alias })
	pt.models(p)
	pt.budgetAndLimits(p)
	pt.parallel(p)
	pt.blocked(p)
	pt.metadata(p)
	pt.budgetID(p)
	p.refuse(whyModelLimit, "model_max_budget")
	p.refuse(whyModelRate, "model_rpm_limit", "model_tpm_limit")
	p.refuse(whyOrgField, "tags", "model_aliases", "object_permission")
	p.refuse(whySpend, "spend")
	p.ignore("updated_by") // the caller is recorded as updated_by
	return pt
}

// loadOrg reads the organization id (param names it in errors).
func (h *Handler) loadOrg(ctx context.Context, param, id string) (keys.Organization, error) {
	return orgs.load(h, ctx, param, id)
}

func (h *Handler) orgNew(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, pt, err := orgs.decode(r, c, nil)
	if err != nil {
		return err
	}
	now := h.now()
	o := keys.Organization{ID: id, CreatedAt: now, UpdatedAt: now, CreatedBy: c.name(), UpdatedBy: c.name()}
	pt.apply(&o, &o.Settings)
	if o.ID == "" {
		o.ID = newID()
	}
	if err := h.linkBudget(r.Context(), c, "", &o.Settings); err != nil {
		return err
	}
	if o, err = orgs.created(h, r.Context(), o.ID, o, nil); err != nil {
		return err
	}
	return ok(w, orgObject(o, nil, nil, now))
}

// orgUpdate is the shared update flow (flows.go): a budget_id it sets
// must exist, as for /organization/new.
func (h *Handler) orgUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	o, err := orgs.updated(h, r, c, nil)
	if err != nil {
		return err
	}
	return h.showOrg(w, r.Context(), o)
}

// showOrg answers with o, its members and its teams.
func (h *Handler) showOrg(w http.ResponseWriter, ctx context.Context, o keys.Organization) error {
	v, err := h.orgWithMembers(ctx, o)
	if err != nil {
		return err
	}
	return ok(w, v)
}

// orgWithMembers renders o with its memberships and teams
// (LiteLLM_OrganizationTableWithMembers).
func (h *Handler) orgWithMembers(ctx context.Context, o keys.Organization) (obj, error) {
	users := make([]string, len(o.Members))
	for i, m := range o.Members {
		users[i] = m.UserID
	}
	members, err := existing(ctx, users, func(ctx context.Context, user string) (keys.Member, error) {
		return h.keys.GetMember(ctx, keys.KindOrg, o.ID, user)
	})
	if err != nil {
		return nil, err
	}
	teams, err := existing(ctx, o.Teams, h.keys.GetTeam)
	if err != nil {
		return nil, err
	}
	return orgObject(o, members, teams, h.now()), nil
}

// orgInfo is GET /organization/info?organization_id=, and LiteLLM's
// deprecated POST /organization/info {"organizations": [...]}, which
// answers a list.
func (h *Handler) orgInfo(w http.ResponseWriter, r *http.Request, c *caller) error {
	ctx := r.Context()
	if r.Method == http.MethodPost {
		ids, err := readIDs(r, "organizations", "Specify list of organization id's to query")
		if err != nil {
			return err
		}
		out := []obj{}
		for _, id := range ids {
			o, err := h.loadOrg(ctx, "organizations", id)
			if err != nil {
				return err
			}
			if err := mayReadOrg(c, o); err != nil {
				return err
			}
			v, err := h.orgWithMembers(ctx, o)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return ok(w, out)
	}
	o, err := h.loadOrg(ctx, "organization_id", (&query{r: r}).str("organization_id"))
	if err != nil {
		return err
	}
	if err := mayReadOrg(c, o); err != nil {
		return err
	}
	return h.showOrg(w, ctx, o)
}

// orgList lists every organization to a viewer, and the organizations a
// user is a member of to the user (LiteLLM).
func (h *Handler) orgList(w http.ResponseWriter, r *http.Request, c *caller) error {
	ctx := r.Context()
	var list []keys.Organization
	switch {
	case c.viewer():
		all, err := h.keys.Organizations().List(ctx)
		if err != nil {
			return err
		}
		list = all
	case c.userID == "":
		return forbidden("a key that belongs to no user may not list organizations")
	default:
		u, _, err := found(h.keys.GetUser(ctx, c.userID))
		if err != nil {
			return err
		}
		held := slices.DeleteFunc(slices.Clone(u.Organizations), func(id string) bool { return !c.holdsOrg(id) })
		if list, err = existing(ctx, held, h.keys.GetOrganization); err != nil {
			return err
		}
	}
	out := make([]obj, 0, len(list))
	for _, o := range list {
		v, err := h.orgWithMembers(ctx, o)
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	return ok(w, out)
}

// orgDelete deletes organizations and their memberships. An organization
// that still has teams is refused (400), and then none is deleted.
func (h *Handler) orgDelete(w http.ResponseWriter, r *http.Request, c *caller) error {
	var gone []obj
	ids, err := h.ids(r, c, "organization_ids", func(ctx context.Context, id string) error {
		o, err := h.loadOrg(ctx, "organization_ids", id)
		if err != nil {
			return err
		}
		if len(o.Teams) > 0 {
			return orgHasTeams(o.ID, o.Teams)
		}
		v, err := h.orgWithMembers(ctx, o)
		gone = append(gone, v)
		return err
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		err := h.keys.Delete(r.Context(), keys.Ref{Kind: keys.KindOrg, ID: id})
		if errors.Is(err, keys.ErrOrgHasTeams) {
			o, _ := h.keys.GetOrganization(r.Context(), id)
			return orgHasTeams(id, o.Teams) // a team joined it meanwhile
		}
		if err != nil && !errors.Is(err, keys.ErrNotFound) {
			return err
		}
	}
	return ok(w, gone)
}

func orgHasTeams(id string, teams []string) *apierr.Error {
	return badParam("organization_ids", "organization %s still has teams %v: delete them or move them to another organization (/team/update organization_id) first", id, teams)
}

// orgMemberAdd adds users (by user_id or user_email; a user that does not
// exist is created) to an organization with a role, each with the
// body's max_budget_in_organization.
func (h *Handler) orgMemberAdd(w http.ResponseWriter, r *http.Request, c *caller) error {
	a, err := orgMembers.readAdd(h, r, c)
	if err != nil {
		return err
	}
	users, memberships, err := orgMembers.add(h, r.Context(), c, a)
	if err != nil {
		return err
	}
	return ok(w, obj{"organization_id": a.id, "updated_users": users, "updated_organization_memberships": memberships})
}

// orgMemberDelete ends a membership; it answers the membership deleted.
func (h *Handler) orgMemberDelete(w http.ResponseWriter, r *http.Request, c *caller) error {
	m, err := orgMembers.load(h, r, c, nil)
	if err != nil {
		return err
	}
	if err := h.keys.RemoveMember(r.Context(), keys.KindOrg, m.GroupID, m.UserID); err != nil {
		if errors.Is(err, keys.ErrNotFound) {
			return orgMembers.missing(m.GroupID, m.UserID)
		}
		return err
	}
	return ok(w, orgMembershipObject(m, h.now()))
}

// orgObject is an organization as LiteLLM shows it
// (LiteLLM_OrganizationTableWithMembers).
func orgObject(o keys.Organization, members []keys.Member, teams []keys.Team, now time.Time) obj {
	v := recordObject("organization_id", o.ID, "organization_alias", o.Alias, o.CreatedAt, o.UpdatedAt)
	v["budget_id"] = orNil(o.BudgetID)
	v["metadata"] = metadata(o.Metadata)
	v["models"] = strList(o.Models)
	v["spend"] = o.Spend
	v["model_spend"] = obj{}
	v["blocked"] = o.Blocked
	v["created_by"], v["updated_by"] = orNil(o.CreatedBy), orNil(o.UpdatedBy)
	v["object_permission"] = nil
	budget := budgetTable(o.Budget, now)
	budget["budget_id"] = orNil(o.BudgetID)
	budget["tpm_limit"], budget["rpm_limit"] = limitOrNil(o.TPMLimit), limitOrNil(o.RPMLimit)
	budget["max_parallel_requests"] = o.MaxParallel
	budget["model_max_budget"] = nil
	v["litellm_budget_table"] = budget
	v["members"] = objectsAt(members, now, orgMembershipObject)
	v["teams"] = objectsAt(teams, now, teamObject)
	return v
}

// orgMembershipObject is LiteLLM's LiteLLM_OrganizationMembershipTable.
func orgMembershipObject(m keys.Member, now time.Time) obj {
	return obj{
		"organization_id":      m.GroupID,
		"user_id":              m.UserID,
		"user_role":            m.Role,
		"user_email":           orNil(m.Email),
		"spend":                m.Spend,
		"budget_id":            nil,
		"created_at":           ts(m.CreatedAt),
		"updated_at":           ts(m.UpdatedAt),
		"litellm_budget_table": budgetTable(m.Budget, now),
	}
}
