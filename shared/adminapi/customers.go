package adminapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

func (h *Handler) customerNew(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, pt, err := endUsers.decode(r, c, nil)
	if err != nil {
		return err
	}
	now := h.now()
	e := keys.EndUser{ID: id, CreatedAt: now, UpdatedAt: now}
	pt.apply(&e, &e.Settings)
	if e.ID == "" {
		return badParam("user_id", "required: the end user id your requests send as \"user\"")
	}
	if e.BudgetID != "" && e.MaxBudget != nil {
		return badParam("budget_id", "Set either 'max_budget' or 'budget_id', not both.")
	}
	if err := h.linkBudget(r.Context(), c, "", &e.Settings); err != nil {
		return err
	}
	e, err = endUsers.created(h, r.Context(), e.ID, e, nil)
	if err != nil {
		return err
	}
	return h.showEndUser(w, r.Context(), e, now)
}

func (h *Handler) customerUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	e, err := endUsers.updated(h, r, c, nil)
	if err != nil {
		return err
	}
	return h.showEndUser(w, r.Context(), e, h.now())
}

// showEndUser answers with e, its litellm_budget_table the budget it
// links, if any.
func (h *Handler) showEndUser(w http.ResponseWriter, ctx context.Context, e keys.EndUser, now time.Time) error {
	var err error
	if e.Settings, err = h.shown(ctx, e.Settings); err != nil {
		return err
	}
	return ok(w, endUserObject(e, now))
}

// endUserIDs reads {"user_ids": [...]} and checks every id exists.
func (h *Handler) endUserIDs(r *http.Request, c *caller) ([]string, error) {
	return h.ids(r, c, "user_ids", func(ctx context.Context, id string) error {
		_, err := endUsers.load(h, ctx, "user_ids", id)
		return err
	})
}

func (h *Handler) customerDelete(w http.ResponseWriter, r *http.Request, c *caller) error {
	ids, err := h.endUserIDs(r, c)
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
	ids, err := h.endUserIDs(r, c)
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
	e, err := endUsers.load(h, r.Context(), "end_user_id", id)
	if err != nil {
		return err
	}
	return h.showEndUser(w, r.Context(), e, h.now())
}

func (h *Handler) customerList(w http.ResponseWriter, r *http.Request, c *caller) error {
	return endUsers.listed(h, w, r, c, true, endUserObject)
}
