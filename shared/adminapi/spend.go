package adminapi

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

func (h *Handler) needSpend() error {
	if h.spend == nil {
		return apierr.New(apierr.NotImplemented, "spend reports need the spend store, which this deployment does not configure")
	}
	return nil
}

// dateRange reads start_date and end_date; a bare end date counts its
// whole day.
func dateRange(q *query) (from, to time.Time) {
	from, to = q.date("start_date"), q.date("end_date")
	if s := q.str("end_date"); len(s) == len(time.DateOnly) && !to.IsZero() {
		to = to.Add(24 * time.Hour)
	}
	return from, to
}

// ownSpendOnly narrows a non-viewer's spend query to its own user id.
func ownSpendOnly(c *caller, user string) (string, error) {
	if c.viewer() {
		return user, nil
	}
	if c.userID == "" || (c.role != keys.RoleInternalUser && c.role != keys.RoleInternalUserViewer) {
		return "", forbidden("reading spend needs a proxy_admin, a proxy_admin_viewer, or an internal user for its own spend")
	}
	if user != "" && user != c.userID {
		return "", forbidden("you may read only your own spend")
	}
	return c.userID, nil
}

// spendQuery checks a per-user spend query before it runs: q read well,
// user narrowed by ownSpendOnly, a spend store configured.
func (h *Handler) spendQuery(q *query, c *caller, user *string) error {
	if q.err != nil {
		return q.err
	}
	u, err := ownSpendOnly(c, *user)
	if err != nil {
		return err
	}
	*user = u
	return h.needSpend()
}

func (h *Handler) spendLogs(w http.ResponseWriter, r *http.Request, c *caller) error {
	q := &query{r: r}
	lq := spend.LogQuery{RequestID: q.str("request_id"), UserID: q.str("user_id"), TeamID: q.str("team_id"), OrgID: q.str("organization_id"),
		Model: q.str("model"), Status: q.str("status_filter")}
	if lq.Status != "" && lq.Status != string(spend.StatusSuccess) && lq.Status != string(spend.StatusFailure) {
		return badParam("status_filter", "want success or failure, got %q", lq.Status)
	}
	if k := q.str("api_key"); k != "" {
		lq.KeyHash = keyHash(k)
	}
	lq.From, lq.To = dateRange(q)
	page, size, paged := logPaging(q, &lq) // spendpage.go
	if err := scopeSpend(c, &lq.TeamID, &lq.OrgID); err != nil {
		return err
	}
	if err := h.orgSpendQuery(r.Context(), q, c, lq.OrgID, &lq.UserID); err != nil { // orgspend.go
		return err
	}
	p, err := h.spend.LogPage(r.Context(), lq)
	if err != nil {
		return err
	}
	aliases, err := h.teamAliases(r.Context())
	if err != nil {
		return err
	}
	return writeLogs(w, p, aliases, page, size, paged)
}

// logObject is a spend log row as LiteLLM's LiteLLM_SpendLogs.
// aliases gives its team's alias (LiteLLM's metadata.user_api_key_team_alias).
func logObject(e *spend.Event, aliases map[string]string) obj {
	var cost any
	if e.CostKnown {
		cost = keys.USD(e.Cost)
	}
	return obj{
		"request_id":          e.RequestID,
		"call_type":           e.CallType,
		"api_key":             e.KeyHash,
		"spend":               cost,
		"total_tokens":        e.PromptTokens + e.CompletionTokens,
		"prompt_tokens":       e.PromptTokens,
		"completion_tokens":   e.CompletionTokens,
		"startTime":           ts(e.Start),
		"endTime":             ts(e.End),
		"model":               e.Model,
		"model_group":         e.ModelGroup,
		"model_id":            e.DeploymentID,
		"custom_llm_provider": e.Provider,
		"api_base":            e.APIBase,
		"user":                e.UserID,
		"team_id":             e.TeamID,
		"end_user":            e.EndUser,
		"organization_id":     orNil(e.OrganizationID),
		"status":              string(e.Status),
		"request_tags":        strList(e.Tags),
		"cache_hit":           "False",
		"metadata": obj{
			"key_alias": orNil(e.KeyAlias), "user_api_key_alias": orNil(e.KeyAlias), "user_api_key_team_alias": orNil(aliases[e.TeamID]),
			"status_code": e.StatusCode, "retries": e.Retries,
			"fallbacks": e.Fallbacks, "usage_estimated": e.UsageEstimated, "stream": e.Stream,
		},
	}
}

func (h *Handler) globalSpendReport(w http.ResponseWriter, r *http.Request, c *caller) error {
	q := &query{r: r}
	from, to := q.date("start_date"), q.date("end_date")
	by, org := q.str("group_by"), q.str("organization_id")
	if err := h.mayReadSpendReport(r.Context(), c, org); err != nil { // orgspend.go
		return err
	}
	if q.err != nil {
		return q.err
	}
	if by == "" {
		by = "team"
	}
	if by != "team" && by != "customer" && by != "api_key" {
		return badParam("group_by", "want team, customer or api_key, got %q", by)
	}
	if by == "customer" && org != "" { // end user rows name no organization
		return badParam("group_by", "group_by=customer cannot be narrowed to an organization_id; use team or api_key")
	}
	if err := h.needSpend(); err != nil {
		return err
	}
	ctx := r.Context()
	days, err := spend.Days(from, to, h.now())
	if err != nil {
		return badParam("end_date", "%v", err)
	}
	out := []obj{}
	if by == "customer" {
		for _, d := range days {
			day, _ := time.Parse(time.DateOnly, d)
			totals, err := h.spend.Totals(ctx, spend.TotalsQuery{From: day, To: day, By: spend.ByEndUser})
			if err != nil {
				return err
			}
			var cs []obj
			for _, t := range totals {
				if t.ID == "" {
					continue
				}
				cs = append(cs, obj{"customer": t.ID, "total_spend": keys.USD(t.Spend), "total_tokens": t.PromptTokens + t.CompletionTokens, "metadata": []obj{}})
			}
			if len(cs) > 0 {
				out = append(out, obj{"group_by_day": d, "customers": cs})
			}
		}
		return ok(w, out)
	}
	dayFrom, _ := time.Parse(time.DateOnly, days[0])
	dayTo, _ := time.Parse(time.DateOnly, days[len(days)-1])
	rows, err := h.spend.Daily(ctx, spend.DailyQuery{From: dayFrom, To: dayTo, OrgID: org})
	if err != nil {
		return err
	}
	type group struct {
		total  spend.Counters
		models map[string]spend.Counters
	}
	var aliases map[string]string
	if by == "team" {
		if aliases, err = h.teamAliases(ctx); err != nil {
			return err
		}
	}
	byDay := map[string]map[string]*group{}
	for _, row := range rows {
		id := row.TeamID
		if by == "api_key" {
			id = row.KeyHash
		}
		g := byDay[row.Day]
		if g == nil {
			g = map[string]*group{}
			byDay[row.Day] = g
		}
		gr := g[id]
		if gr == nil {
			gr = &group{models: map[string]spend.Counters{}}
			g[id] = gr
		}
		gr.total = gr.total.Plus(row.Counters)
		gr.models[row.ModelGroup] = gr.models[row.ModelGroup].Plus(row.Counters)
	}
	for _, d := range days {
		g := byDay[d]
		if len(g) == 0 {
			continue
		}
		ids := make([]string, 0, len(g))
		for id := range g {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var entries []obj
		for _, id := range ids {
			gr := g[id]
			var md []obj
			for _, m := range sortedKeys(gr.models) {
				mc := gr.models[m]
				md = append(md, obj{"model": m, "spend": keys.USD(mc.Spend), "total_tokens": mc.PromptTokens + mc.CompletionTokens})
			}
			e := obj{"total_spend": keys.USD(gr.total.Spend), "metadata": md}
			if by == "team" {
				e["team_name"], e["team_id"] = teamName(aliases, id), orNil(id)
			} else {
				e["api_key"] = id
			}
			entries = append(entries, e)
		}
		key := "teams"
		if by == "api_key" {
			key = "api_keys"
		}
		out = append(out, obj{"group_by_day": d, key: entries})
	}
	return ok(w, out)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// metrics is LiteLLM's SpendMetrics.
func metrics(c spend.Counters) obj {
	return obj{
		"spend": keys.USD(c.Spend), "prompt_tokens": c.PromptTokens, "completion_tokens": c.CompletionTokens,
		"cache_read_input_tokens": c.CachedTokens, "cache_creation_input_tokens": 0,
		"total_tokens": c.PromptTokens + c.CompletionTokens, "successful_requests": c.Successes,
		"failed_requests": c.Failures, "api_requests": c.Requests,
	}
}

// activity answers /user/daily/activity and /team/daily/activity in
// LiteLLM's shape: results[] per day with metrics and a breakdown by model,
// provider, API key (and entity: the team), then totals in metadata.
func (h *Handler) activity(w http.ResponseWriter, r *http.Request, rows []spend.DailyRow, entity func(spend.DailyRow) string, meta map[string]obj, page, size int) error {
	type day struct {
		total                      spend.Counters
		models, providers, apiKeys map[string]spend.Counters
		entities                   map[string]spend.Counters
	}
	days := map[string]*day{}
	var total spend.Counters
	for _, row := range rows {
		d := days[row.Day]
		if d == nil {
			d = &day{models: map[string]spend.Counters{}, providers: map[string]spend.Counters{}, apiKeys: map[string]spend.Counters{}, entities: map[string]spend.Counters{}}
			days[row.Day] = d
		}
		d.total = d.total.Plus(row.Counters)
		d.models[row.ModelGroup] = d.models[row.ModelGroup].Plus(row.Counters)
		d.providers[row.Provider] = d.providers[row.Provider].Plus(row.Counters)
		d.apiKeys[row.KeyHash] = d.apiKeys[row.KeyHash].Plus(row.Counters)
		if entity != nil {
			d.entities[entity(row)] = d.entities[entity(row)].Plus(row.Counters)
		}
		total = total.Plus(row.Counters)
	}
	breakdown := func(m map[string]spend.Counters, meta map[string]obj) obj {
		o := obj{}
		for k, c := range m {
			md := meta[k]
			if md == nil {
				md = obj{}
			}
			o[k] = obj{"metrics": metrics(c), "metadata": md}
		}
		return o
	}
	names := sortedKeys(days)
	results := []obj{}
	for _, n := range names {
		d := days[n]
		b := obj{"models": breakdown(d.models, nil), "providers": breakdown(d.providers, nil), "api_keys": breakdown(d.apiKeys, nil)}
		if entity != nil {
			b["entities"] = breakdown(d.entities, meta)
		}
		results = append(results, obj{"date": n, "metrics": metrics(d.total), "breakdown": b})
	}
	pages := max((len(results)+size-1)/size, 1)
	lo, hi := min((page-1)*size, len(results)), min(page*size, len(results))
	return ok(w, obj{"results": results[lo:hi], "metadata": obj{
		"total_spend": keys.USD(total.Spend), "total_prompt_tokens": total.PromptTokens,
		"total_completion_tokens": total.CompletionTokens, "total_tokens": total.PromptTokens + total.CompletionTokens,
		"total_api_requests": total.Requests, "total_successful_requests": total.Successes,
		"total_failed_requests": total.Failures, "total_cache_read_input_tokens": total.CachedTokens,
		"total_cache_creation_input_tokens": 0, "page": page, "total_pages": pages, "has_more": page < pages,
	}})
}

func activityQuery(q *query) (spend.DailyQuery, int, int) {
	dq := spend.DailyQuery{From: q.date("start_date"), To: q.date("end_date"), ModelGroup: q.str("model")}
	if k := q.str("api_key"); k != "" {
		dq.KeyHash = keyHash(k)
	}
	return dq, q.int("page", 1, 1, 1_000_000), q.int("page_size", 50, 1, 1000)
}

func (h *Handler) userDailyActivity(w http.ResponseWriter, r *http.Request, c *caller) error {
	q := &query{r: r}
	dq, page, size := activityQuery(q)
	dq.UserID = q.str("user_id")
	if err := scopeSpend(c, &dq.TeamID, &dq.OrgID); err != nil {
		return err
	}
	if err := h.spendQuery(q, c, &dq.UserID); err != nil {
		return err
	}
	rows, err := h.spend.Daily(r.Context(), dq)
	if err != nil {
		return err
	}
	// LiteLLM's user activity breaks down by entity too: the user
	// (entity_id_field user_id; "Unassigned" for none).
	return h.activity(w, r, rows, func(row spend.DailyRow) string {
		if row.UserID == "" {
			return "Unassigned"
		}
		return row.UserID
	}, nil, page, size)
}

func (h *Handler) teamDailyActivity(w http.ResponseWriter, r *http.Request, c *caller) error {
	return h.groupActivity(w, r, c, activityGroup{
		param: "team_ids", noun: "team", plural: "teams", role: "an admin",
		admin: func(ctx context.Context, id string) (bool, error) {
			role, err := h.teamRole(ctx, c, id)
			return role == keys.MemberAdmin, err
		},
		filter: func(dq *spend.DailyQuery, id string) { dq.TeamID = id },
		of:     func(row spend.DailyRow) string { return row.TeamID },
		meta:   h.teamsMeta, // teamalias.go
	})
}

// activityGroup is what a daily activity route of groups (teams,
// organizations) needs to know of its kind.
type activityGroup struct {
	param, noun, plural, role string                                             // "team_ids", "team", "teams", "an admin"
	admin                     func(ctx context.Context, id string) (bool, error) // whether the caller administers group id
	filter                    func(dq *spend.DailyQuery, id string)              // narrows dq to group id
	of                        func(spend.DailyRow) string                        // a row's group ("" when none)
	// meta, if set, gives each group's metadata in the breakdown (a team's alias)
	meta func(ctx context.Context, rows []spend.DailyRow) (map[string]obj, error)
}

// groupActivity answers a daily activity route of groups: the rows of the
// groups g.param names, each readable by its admins (and viewers); with
// none given, a viewer reads every row that belongs to some group.
func (h *Handler) groupActivity(w http.ResponseWriter, r *http.Request, c *caller, g activityGroup) error {
	q := &query{r: r}
	dq, page, size := activityQuery(q)
	ids := q.list(g.param)
	if q.err != nil {
		return q.err
	}
	ctx := r.Context()
	if !c.viewer() {
		if len(ids) == 0 {
			return forbidden("give %s of %s you are %s of", g.param, g.plural, g.role)
		}
		for _, id := range ids {
			admin, err := g.admin(ctx, id)
			if err != nil {
				return err
			}
			if !admin {
				return forbidden("you are not %s of %s %s", g.role, g.noun, id)
			}
		}
	}
	if err := h.needSpend(); err != nil {
		return err
	}
	var rows []spend.DailyRow
	if len(ids) == 0 {
		all, err := h.spend.Daily(ctx, dq)
		if err != nil {
			return err
		}
		for _, row := range all {
			if g.of(row) != "" {
				rows = append(rows, row)
			}
		}
	}
	for _, id := range ids {
		g.filter(&dq, id)
		got, err := h.spend.Daily(ctx, dq)
		if err != nil {
			return err
		}
		rows = append(rows, got...)
	}
	var meta map[string]obj
	if g.meta != nil {
		var err error
		if meta, err = g.meta(ctx, rows); err != nil {
			return err
		}
	}
	return h.activity(w, r, rows, g.of, meta, page, size)
}
