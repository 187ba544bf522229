package adminapi

import (
	"errors"
	"net/http"

	"github.com/sluice-gw/sluice/shared/keys"
)

// applyEndUserSettings sets on e the end user settings present in p.
func applyEndUserSettings(p *params, e *keys.EndUser) {
	if v, ok := p.str("alias"); ok || p.has("alias") {
		e.Alias = v
	}
	if v, ok := p.boolean("blocked"); ok || p.has("blocked") {
		e.Blocked = v
	}
	if v, ok := p.money("max_budget"); ok {
		e.MaxBudget = v
	}
	if v, ok := p.money("soft_budget"); ok {
		e.SoftBudget = v
	}
	if v, ok := p.period("budget_duration"); ok {
		e.Duration = v
	}
	if v, ok := p.limit("rpm_limit"); ok || p.has("rpm_limit") {
		e.RPMLimit = v
	}
	if v, ok := p.limit("tpm_limit"); ok || p.has("tpm_limit") {
		e.TPMLimit = v
	}
	p.refuse(whyRegion, "allowed_model_region", "default_model")
	p.refuse(whyBudgetID, "budget_id")
	p.refuse(whyParallel, "max_parallel_requests")
	p.refuse(whyModelLimit, "model_max_budget")
	p.refuse(whySpend, "spend")
	p.refuse(whyPermissions, "object_permission")
}

func (h *Handler) loadEndUser(r *http.Request, param, id string) (keys.EndUser, error) {
	if id == "" {
		return keys.EndUser{}, badParam(param, "required")
	}
	e, err := h.keys.GetEndUser(r.Context(), id)
	if errors.Is(err, keys.ErrNotFound) {
		return keys.EndUser{}, notFound(param, "%s: no end user %q", param, id)
	}
	return e, err
}

func (h *Handler) customerNew(w http.ResponseWriter, r *http.Request, c *caller) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	p, err := readParams(r)
	if err != nil {
		return err
	}
	now := h.now()
	e := keys.EndUser{CreatedAt: now, UpdatedAt: now}
	e.ID, _ = p.str("user_id")
	applyEndUserSettings(p, &e)
	if err := p.done(); err != nil {
		return err
	}
	if e.ID == "" {
		return badParam("user_id", "required: the end user id your requests send as \"user\"")
	}
	if err := h.keys.CreateEndUser(r.Context(), e); err != nil {
		if errors.Is(err, keys.ErrExists) {
			return badParam("user_id", "end user %q exists already", e.ID)
		}
		return err
	}
	e, err = h.keys.GetEndUser(r.Context(), e.ID)
	if err != nil {
		return err
	}
	return ok(w, endUserObject(e, now))
}

func (h *Handler) customerUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	p, err := readParams(r)
	if err != nil {
		return err
	}
	id, _ := p.str("user_id")
	var probe keys.EndUser
	applyEndUserSettings(p, &probe)
	if err := p.done(); err != nil {
		return err
	}
	e, err := h.loadEndUser(r, "user_id", id)
	if err != nil {
		return err
	}
	p2, _ := reparse(p)
	applyEndUserSettings(p2, &e)
	e.UpdatedAt = h.now()
	e, err = h.keys.UpdateEndUser(r.Context(), e)
	if err != nil {
		return err
	}
	return ok(w, endUserObject(e, h.now()))
}

// endUserIDs reads {"user_ids": [...]} and checks every id exists.
func (h *Handler) endUserIDs(r *http.Request) ([]string, error) {
	p, err := readParams(r)
	if err != nil {
		return nil, err
	}
	ids, _ := p.strs("user_ids")
	if err := p.done(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, badParam("user_ids", "required")
	}
	for _, id := range ids {
		if _, err := h.loadEndUser(r, "user_ids", id); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

func (h *Handler) customerDelete(w http.ResponseWriter, r *http.Request, c *caller) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	ids, err := h.endUserIDs(r)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := h.keys.Delete(r.Context(), keys.Ref{Kind: keys.KindEndUser, ID: id}); err != nil && !errors.Is(err, keys.ErrNotFound) {
			return err
		}
	}
	return ok(w, obj{"deleted_customers": len(ids), "user_ids": ids})
}

func (h *Handler) customerBlock(w http.ResponseWriter, r *http.Request, c *caller) error {
	return h.setEndUsersBlocked(w, r, c, true)
}

func (h *Handler) customerUnblock(w http.ResponseWriter, r *http.Request, c *caller) error {
	return h.setEndUsersBlocked(w, r, c, false)
}

func (h *Handler) setEndUsersBlocked(w http.ResponseWriter, r *http.Request, c *caller, blocked bool) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	ids, err := h.endUserIDs(r)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := h.keys.Block(r.Context(), keys.Ref{Kind: keys.KindEndUser, ID: id}, blocked); err != nil {
			return err
		}
	}
	return ok(w, obj{"blocked_users": ids})
}

func (h *Handler) customerInfo(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.viewer() {
		return forbidden("reading end users needs a proxy_admin or proxy_admin_viewer")
	}
	id := (&query{r: r}).str("end_user_id")
	e, err := h.loadEndUser(r, "end_user_id", id)
	if err != nil {
		return err
	}
	return ok(w, endUserObject(e, h.now()))
}

func (h *Handler) customerList(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.viewer() {
		return forbidden("listing end users needs a proxy_admin or proxy_admin_viewer")
	}
	es, err := h.keys.ListEndUsers(r.Context())
	if err != nil {
		return err
	}
	now := h.now()
	out := []obj{}
	for _, e := range es {
		out = append(out, endUserObject(e, now))
	}
	return ok(w, out)
}
