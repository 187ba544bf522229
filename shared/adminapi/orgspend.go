package adminapi

import (
	"context"
	"net/http"

	"github.com/sluice-gw/sluice/shared/spend"
)

// Spend reports by organization: /spend/logs and /global/spend/report take
// organization_id, /organization/daily/activity takes organization_ids
// (LiteLLM's). An org_admin reads its own organization's spend through
// them, and no other's.

// orgSpendReader reports whether c may read the spend of the organization
// org as a whole: a viewer, or an org_admin of org.
func (h *Handler) orgSpendReader(ctx context.Context, c *caller, org string) (bool, error) {
	if c.viewer() {
		return true, nil
	}
	return h.orgAdmin(ctx, c, org)
}

// orgSpendQuery is spendQuery for a query that may name an organization:
// an org_admin of org reads every user's spend in it; anyone else as
// spendQuery allows (its own, within org).
func (h *Handler) orgSpendQuery(ctx context.Context, q *query, c *caller, org string, user *string) error {
	if org != "" && q.err == nil && !c.viewer() {
		admin, err := h.orgAdmin(ctx, c, org)
		if err != nil {
			return err
		}
		if admin {
			return h.needSpend()
		}
	}
	return h.spendQuery(q, c, user)
}

// mayReadSpendReport checks a /global/spend/report caller: a viewer, or an
// org_admin of the organization the report is narrowed to.
func (h *Handler) mayReadSpendReport(ctx context.Context, c *caller, org string) error {
	if org != "" {
		if ok, err := h.orgSpendReader(ctx, c, org); err != nil || ok {
			return err
		}
		return forbidden("the global spend report of organization %s needs a proxy_admin, a proxy_admin_viewer or an org_admin of it", org)
	}
	if !c.viewer() {
		return forbidden("the global spend report needs a proxy_admin or proxy_admin_viewer (an org_admin: with the organization_id of its organization)")
	}
	return nil
}

// orgDailyActivity answers /organization/daily/activity in LiteLLM's shape
// (as /team/daily/activity, with entities by organization).
func (h *Handler) orgDailyActivity(w http.ResponseWriter, r *http.Request, c *caller) error {
	return h.groupActivity(w, r, c, activityGroup{
		param: "organization_ids", noun: "organization", plural: "organizations", role: "an org_admin",
		admin:  func(ctx context.Context, id string) (bool, error) { return h.orgAdmin(ctx, c, id) },
		filter: func(dq *spend.DailyQuery, id string) { dq.OrgID = id },
		of:     func(row spend.DailyRow) string { return row.OrgID },
	})
}
