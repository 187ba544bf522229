package adminapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// Reusable budgets (LiteLLM's /budget/* routes, budget_management_endpoints.py):
// rows of limits that end users, team memberships and organizations link
// by budget_id. Only a proxy admin writes them; proxy admins and viewers
// read them.

// budgetPatch reads the fields of /budget/new and /budget/update onto a
// budget: what the body gives, nothing else (LiteLLM's exclude_unset).
func budgetPatch(p *params) patch[keys.BudgetRecord] {
	var pt patch[keys.BudgetRecord]
	pt.budgetAndLimits(p)
	pt.parallel(p)
	setting(&pt, p, "model_max_budget", (*params).modelBudgets, func(s *keys.Settings, v map[string]keys.ModelBudget) { s.ModelMaxBudget = v })
	// budget_reset_at is computed from budget_duration (LiteLLM's resets
	// from when it was set, docs/spend-and-budgets.md), never set.
	p.refuse("budget_reset_at is computed from budget_duration", "budget_reset_at")
	p.ignore("budget_id")
	return pt
}

// budgets is how the shared flows (flows.go) handle reusable budgets:
// proxy admins only.
var budgets = record[keys.BudgetRecord]{noun: "budget", idParam: "budget_id", parse: budgetPatch,
	get: keys.Admin.GetBudget, writes: keys.Admin.Budgets,
	settings: func(b *keys.BudgetRecord) *keys.Settings { return &b.Settings },
	stamp:    func(b *keys.BudgetRecord, now time.Time, by string) { b.UpdatedAt, b.UpdatedBy = now, by }}

func (h *Handler) budgetNew(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, pt, err := budgets.decode(r, c, nil)
	if err != nil {
		return err
	}
	if id == "" {
		id = newID() // LiteLLM's budget_id default: a uuid
	}
	if err := keys.ValidID("budget_id", id); err != nil {
		return err
	}
	now := h.now()
	b := keys.BudgetRecord{ID: id, CreatedAt: now, UpdatedAt: now, CreatedBy: c.name(), UpdatedBy: c.name()}
	pt.apply(&b, &b.Settings)
	ctx := r.Context()
	if err := h.keys.Budgets().Create(ctx, b); err != nil {
		if errors.Is(err, keys.ErrExists) {
			return badParam("budget_id", "Budget with id '%s' already exists.", id)
		}
		return err
	}
	if b, err = h.keys.GetBudget(ctx, id); err != nil {
		return err
	}
	return ok(w, budgetObject(b, now))
}

func (h *Handler) budgetUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	return budgets.updateAndShow(h, w, r, c, nil, func(b keys.BudgetRecord) obj { return budgetObject(b, h.now()) })
}

// loadBudget reads the budget id, a 404 naming param when it does not exist.
func (h *Handler) loadBudget(ctx context.Context, param, id string) (keys.BudgetRecord, error) {
	return budgets.load(h, ctx, param, id)
}

// budgetInfo answers {"budgets": [ids]} with the budgets that exist
// (LiteLLM's find_many: an unknown id is left out).
func (h *Handler) budgetInfo(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.viewer() {
		return forbidden("reading budgets needs a proxy_admin or proxy_admin_viewer")
	}
	ids, err := readIDs(r, "budgets", "Specify list of budget id's to query. Passed in=[]")
	if err != nil {
		return err
	}
	bs, err := existing(r.Context(), ids, h.keys.GetBudget)
	if err != nil {
		return err
	}
	return ok(w, objectsAt(bs, h.now(), budgetObject))
}

func (h *Handler) budgetList(w http.ResponseWriter, r *http.Request, c *caller) error {
	return budgets.listed(h, w, r, c, false, budgetObject)
}

// budgetDelete deletes {"id": budget id}. A budget still linked is
// refused with a 400 naming the records that link it (LiteLLM's database
// refuses it too, by its foreign keys, with a less helpful error).
func (h *Handler) budgetDelete(w http.ResponseWriter, r *http.Request, c *caller) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	id, err := requiredParam(r, "id", "required: the budget_id to delete")
	if err != nil {
		return err
	}
	ctx := r.Context()
	b, err := h.loadBudget(ctx, "id", id)
	if err != nil {
		return err
	}
	links, err := h.keys.BudgetLinks(ctx, id)
	if err != nil {
		return err
	}
	if len(links) > 0 {
		return badParam("id", "budget %q is linked by %s: unlink them first (budget_id null on each)", id, linkNames(links))
	}
	if err := h.keys.DeleteBudget(ctx, id); err != nil {
		return err
	}
	return ok(w, budgetObject(b, h.now()))
}

// linkNames names at most 10 linking records as the admin routes name
// them ("end user x", "team member u of team t").
func linkNames(links []keys.Ref) string {
	var names []string
	for i, l := range links {
		if i == 10 {
			names = append(names, fmt.Sprintf("and %d more", len(links)-10))
			break
		}
		switch l.Kind {
		case keys.KindEndUser:
			names = append(names, "end user "+l.ID)
		case keys.KindMember:
			team, user, _ := strings.Cut(l.ID, "#")
			names = append(names, "team member "+user+" of team "+team)
		default:
			names = append(names, string(l.Kind)+" "+l.ID)
		}
	}
	return strings.Join(names, ", ")
}

// budgetSettingFields are the fields /budget/settings describes, in
// LiteLLM's order (BudgetNewRequest's), with its types and descriptions.
var budgetSettingFields = []struct{ name, typ, desc string }{
	{"max_budget", "Float", "Requests will fail if this budget (in USD) is exceeded."},
	{"soft_budget", "Float", "Requests will NOT fail if this is exceeded. Will fire alerting though."},
	{"max_parallel_requests", "Integer", "Max concurrent requests allowed for this budget id."},
	{"tpm_limit", "Integer", "Max tokens per minute, allowed for this budget id."},
	{"rpm_limit", "Integer", "Max requests per minute, allowed for this budget id."},
	{"budget_duration", "String", "Max duration budget should be set for (e.g. '1hr', '1d', '28d')"},
	{"model_max_budget", "Object", "Max budget for each model (e.g. {'gpt-4o': {'max_budget': '0.0000001', 'budget_duration': '1d'}})"},
}

// budgetSettings answers GET /budget/settings?budget_id= with LiteLLM's
// list of field descriptors, each with the budget's value (null for a
// budget that does not exist, as LiteLLM answers).
func (h *Handler) budgetSettings(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.viewer() {
		return forbidden("reading budgets needs a proxy_admin or proxy_admin_viewer")
	}
	id := (&query{r: r}).str("budget_id")
	if id == "" {
		return badParam("budget_id", "required")
	}
	var values obj
	b, err := h.keys.GetBudget(r.Context(), id)
	switch {
	case err == nil:
		values = budgetObject(b, h.now())
	case errors.Is(err, keys.ErrNotFound):
		values = obj{}
	default:
		return err
	}
	out := make([]obj, 0, len(budgetSettingFields))
	for _, f := range budgetSettingFields {
		out = append(out, obj{
			"field_name": f.name, "field_type": f.typ, "field_description": f.desc,
			"field_value": values[f.name], "stored_in_db": true, "field_default_value": nil,
		})
	}
	return ok(w, out)
}

// budgetObject is a budget as LiteLLM's LiteLLM_BudgetTable row shows it.
func budgetObject(b keys.BudgetRecord, now time.Time) obj {
	var parallel any
	if b.MaxParallel != nil {
		parallel = *b.MaxParallel
	}
	return obj{
		"budget_id":             b.ID,
		"max_budget":            usdOrNil(b.MaxBudget),
		"soft_budget":           usdOrNil(b.SoftBudget),
		"max_parallel_requests": parallel,
		"tpm_limit":             limitOrNil(b.TPMLimit),
		"rpm_limit":             limitOrNil(b.RPMLimit),
		"model_max_budget":      modelBudgetsOrNil(b.ModelMaxBudget),
		"budget_duration":       orNil(b.Duration),
		"budget_reset_at":       ts(b.ResetAt(now)),
		"created_at":            ts(b.CreatedAt),
		"created_by":            b.CreatedBy,
		"updated_at":            ts(b.UpdatedAt),
		"updated_by":            b.UpdatedBy,
	}
}

// modelBudgetsOrNil renders model_max_budget as a budget takes it.
func modelBudgetsOrNil(m map[string]keys.ModelBudget) any {
	if len(m) == 0 {
		return nil
	}
	out := make(obj, len(m))
	for model, mb := range m {
		out[model] = obj{"max_budget": keys.USD(mb.Limit), "budget_duration": orNil(mb.Period)}
	}
	return out
}

// linkBudget checks a budget_id a write sets on settings s (was: the id
// before it): only a proxy admin links a budget (it replaces the record's
// limits, so an internal user or a team admin could otherwise raise its
// own), and the budget must exist (a 400 naming budget_id). Unchanged: no
// check. Every record kind that links budgets calls it.
func (h *Handler) linkBudget(ctx context.Context, c *caller, was string, s *keys.Settings) error {
	if s.BudgetID == was {
		return nil
	}
	if !c.admin() {
		return forbidden("only a proxy_admin may set budget_id: a linked budget replaces the record's own limits")
	}
	if s.BudgetID == "" {
		return nil
	}
	if err := keys.ValidID("budget_id", s.BudgetID); err != nil {
		return err
	}
	_, err := h.keys.GetBudget(ctx, s.BudgetID)
	if errors.Is(err, keys.ErrNotFound) {
		return badParam("budget_id", "no budget %q: create it with /budget/new first", s.BudgetID)
	}
	return err
}

// shown returns s with the limits of the budget it links, as the records'
// litellm_budget_table shows them.
func (h *Handler) shown(ctx context.Context, s keys.Settings) (keys.Settings, error) {
	err := keys.ResolveBudget(ctx, h.keys, &s)
	return s, err
}
