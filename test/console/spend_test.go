package console

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluice-gw/sluice/shared/cooldown"
)

// TestConsoleSpendAndModels: a script makes a team and a key and calls
// the OpenAI API with it; the spend page then shows the team's and the
// key's non-zero spend in the chart's table, and finds each request in
// the logs by its id (x-litellm-call-id); the models page lists the
// config's groups and its health button shows every deployment's result.
// On each store, in one browser.
func TestConsoleSpendAndModels(t *testing.T) {
	ctx := browser(t)
	for _, store := range stores() {
		t.Run(store, func(t *testing.T) {
			s := start(t, store)
			shots := store == "memory"
			t.Run("spend", func(t *testing.T) { spendFlow(t, ctx, s, shots) })
			t.Run("models", func(t *testing.T) { modelsFlow(t, ctx, s, shots) })
			t.Run("internal user", func(t *testing.T) { ownSpendFlow(t, ctx, s) })
		})
	}
}

// chatCallID makes one chat completion with key and returns its call id.
func (s *stack) chatCallID(t *testing.T, key, model string) string {
	t.Helper()
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"hello from the console test"}]}`
	req, err := http.NewRequest("POST", s.base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Header.Get("x-litellm-call-id")
	if res.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("chat completion: %d, call id %q", res.StatusCode, id)
	}
	return id
}

// waitLogged waits until the spend pipeline recorded request id (local
// mode's in-process queue writes it shortly after the answer).
func (s *stack) waitLogged(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var logs []map[string]any
		if s.call(t, "GET", "/spend/logs?request_id="+id, master, nil, &logs) == http.StatusOK && len(logs) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s not in the spend logs after 90s", id)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fresh selects the spend page rendered after the last openSpend, never
// the one the browser showed before it (a hash change re-renders the page
// a moment after the navigation returns).
const fresh = `.page-spend:not([data-stale])`

// openSpend marks the page shown as stale, opens the spend page with
// query and waits for sel (under fresh) on the new one.
func openSpend(t *testing.T, ctx context.Context, s *stack, query, sel string) {
	t.Helper()
	run(t, ctx, "open spend?"+query,
		js(`document.querySelectorAll('main > section').forEach((n) => n.setAttribute('data-stale', ''))`),
		chromedp.Navigate(s.base+"/ui/#/spend?"+query),
		visible(fresh+" "+sel))
}

// rowSpend is a script returning the Spend cell of the row named name in
// the spend page's data table once it is above zero, else "".
func rowSpend(name string) string {
	return fmt.Sprintf(`(() => {
  const r = [...document.querySelectorAll('.page-spend:not([data-stale]) [data-test="spend-table"] tbody tr')].find((tr) => tr.cells[0].textContent.trim() === %q);
  if (!r) return '';
  const v = parseFloat(r.cells[1].textContent.replace(/[^0-9.]/g, ''));
  return v > 0 ? r.cells[1].textContent.trim() : '';
})()`, name)
}

func spendFlow(t *testing.T, ctx context.Context, s *stack, shots bool) {
	s.mustCall(t, "POST", "/team/new", master, map[string]any{"team_id": "spend-team", "team_alias": "Spend team", "max_budget": 50, "budget_duration": "30d"}, nil)
	var key struct{ Key string }
	s.mustCall(t, "POST", "/key/generate", master, map[string]any{"key_alias": "spend-key", "team_id": "spend-team", "max_budget": 10, "budget_duration": "1d"}, &key)
	var ids []string
	for _, m := range []string{"gpt-4o-mini", "gpt-4o", "gpt-4o-mini"} {
		ids = append(ids, s.chatCallID(t, key.Key, m))
	}
	for _, id := range ids {
		s.waitLogged(t, id)
	}

	signIn(t, ctx, s.base, master)
	for _, c := range []struct{ by, name string }{{"team", "Spend team"}, {"key", "spend-key"}, {"model", "gpt-4o"}} {
		openSpend(t, ctx, s, "by="+c.by, `[data-test="spend-chart"] svg rect`)
		got := get(t, ctx, "find "+c.name+"'s spend in the chart's table", chromedp.Poll[string](rowSpend(c.name), chromedp.WithPollingTimeout(stepTimeout)))
		t.Logf("spend of %s %s: %s", c.by, c.name, got)
	}
	openSpend(t, ctx, s, "by=team&metric=tokens", `[data-test="budgets"] table`)
	if got := text(t, ctx, fresh+` [data-test="budgets"]`); !strings.Contains(got, "spend-key") || !strings.Contains(got, "Spend team") {
		t.Errorf("budgets lack the key's or the team's budget: %q", got)
	}

	// The logs: search by one request's id.
	run(t, ctx, "search the logs by request id",
		chromedp.SetValue(chromedp.CSS(`form[data-test="log-search"] input[name="request_id"]`), ids[1]),
		chromedp.Click(chromedp.CSS(`form[data-test="log-search"] button[type="submit"]`)),
		// Until the page shows the search's answer: one row, that request.
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => {
  const rows = document.querySelectorAll('.page-spend [data-test="spend-logs"] tbody tr');
  return rows.length === 1 && rows[0].textContent.includes(%q);
})()`, ids[1]), chromedp.WithPollingTimeout(stepTimeout)),
	)
	logs := text(t, ctx, `.page-spend [data-test="spend-logs"]`)
	if !strings.Contains(logs, ids[1]) || strings.Contains(logs, ids[0]) || !strings.Contains(logs, "gpt-4o") {
		t.Errorf("logs searched by %s: %q, want that request only", ids[1], logs)
	}
	if shots {
		openSpend(t, ctx, s, "by=key", `[data-test="spend-logs"]`)
		screenshot(t, ctx, "spend")
		run(t, ctx, "narrow screen", chromedp.EmulateViewport(375, 800), chromedp.Reload(), visible(`.page-spend [data-test="spend-logs"]`))
		screenshot(t, ctx, "spend-narrow")
		run(t, ctx, "wide screen", chromedp.ResetViewport())
	}
	// A status the API refuses: its error next to the status field, not a blank page.
	openSpend(t, ctx, s, "status_filter=nope", `form[data-test="log-search"] [name="status_filter"][aria-invalid="true"]`)
	if got := text(t, ctx, fresh+` form[data-test="log-search"] .field-error:not([hidden])`); !strings.Contains(got, "success or failure") {
		t.Errorf("bad status_filter: %q, want the API's error next to the field", got)
	}
}

func modelsFlow(t *testing.T, ctx context.Context, s *stack, shots bool) {
	signIn(t, ctx, s.base, master)
	run(t, ctx, "open models", chromedp.Click(chromedp.CSS(`nav#nav a[href="#/models"]`)), visible(`.page-models [data-test="model-groups"] table`))
	groups := text(t, ctx, `.page-models [data-test="model-groups"]`)
	for _, g := range []string{"gpt-4o-mini", "gpt-4o", "text-embedding-3-small", "mock-gpt-4o-mini-a", "mock-gpt-4o-mini-b"} {
		if !strings.Contains(groups, g) {
			t.Errorf("models page lacks %s: %q", g, groups)
		}
	}
	run(t, ctx, "run the health check",
		chromedp.Click(chromedp.CSS(`.page-models .toolbar button.primary`)),
		visible(`.page-models [data-test="health-results"] table`))
	res := text(t, ctx, `.page-models [data-test="health-results"]`)
	if !strings.Contains(res, "4 healthy") || !strings.Contains(res, "mock-gpt-4o") {
		t.Errorf("health results: %q, want the config's 4 deployments healthy", res)
	}
	n := get(t, ctx, "count healthy cells", chromedp.Evaluate[int](`document.querySelectorAll('.page-models [data-health="healthy"]').length`))
	if n != 4 {
		t.Errorf("%d deployments marked healthy in the list, want 4", n)
	}
	cooldownFlow(t, ctx, s)
	if shots {
		screenshot(t, ctx, "models")
	}
}

// cooldownFlow: no deployment is cooling down; one is put in cooldown
// through the gateway's cooldown store (as the router does after
// failures), and the models page's Refresh shows it cooling down until the
// store's time, and only it.
func cooldownFlow(t *testing.T, ctx context.Context, s *stack) {
	const cooled = "mock-gpt-4o-mini-b" // gpt-4o-mini keeps mock-gpt-4o-mini-a for later flows
	none := `document.querySelectorAll('.page-models [data-cooldown="none"]').length`
	if n := get(t, ctx, "count deployments not cooling down", chromedp.Evaluate[int](none)); n != 4 {
		t.Errorf("%d deployments shown as not cooling down, want 4", n)
	}
	until, err := s.gw.Cooldowns.RecordFailure(context.Background(), cooldown.Failure{
		Deployment: cooled, Class: "server_error", At: time.Now(), Immediate: true, Cooldown: 10 * time.Minute})
	if err != nil || until.IsZero() {
		t.Fatalf("RecordFailure = %v, %v", until, err)
	}
	run(t, ctx, "refresh the models page",
		chromedp.Click(chromedp.CSS(`.page-models .toolbar button[data-test="refresh"]`)),
		visible(`.page-models [data-cooldown="cooling"]`))
	type cell struct{ Row, Text, Title string }
	cells := get(t, ctx, "read cooling cells", chromedp.Evaluate[[]cell](`[...document.querySelectorAll('.page-models [data-cooldown="cooling"]')].map((c) => ({Row: c.closest('tr').cells[0].textContent.trim(), Text: c.textContent, Title: c.title}))`))
	if len(cells) != 1 || cells[0].Row != cooled || !cooldownText.MatchString(cells[0].Text) || cells[0].Title != "until "+until.UTC().Format(time.RFC3339) {
		t.Errorf("cooling down cells %+v, want only %s until %s", cells, cooled, until.UTC().Format(time.RFC3339))
	}
	if n := get(t, ctx, "count deployments not cooling down", chromedp.Evaluate[int](none)); n != 3 {
		t.Errorf("%d deployments shown as not cooling down after the refresh, want 3", n)
	}
}

var cooldownText = regexp.MustCompile(`^cooling down until \d\d:\d\d:\d\d$`)

// ownSpendFlow: an internal user's spend page shows its own spend and
// logs only, and a typed URL for another user's logs gets the API's 403.
func ownSpendFlow(t *testing.T, ctx context.Context, s *stack) {
	var carol, dave struct{ Key string }
	s.mustCall(t, "POST", "/user/new", master, map[string]any{"user_id": "carol", "user_role": "internal_user", "auto_create_key": true, "key_alias": "carol-key"}, &carol)
	s.mustCall(t, "POST", "/user/new", master, map[string]any{"user_id": "dave", "user_role": "internal_user", "auto_create_key": true, "key_alias": "dave-key"}, &dave)
	mine, theirs := s.chatCallID(t, carol.Key, "gpt-4o"), s.chatCallID(t, dave.Key, "gpt-4o")
	s.waitLogged(t, mine)
	s.waitLogged(t, theirs)

	signIn(t, ctx, s.base, carol.Key)
	openSpend(t, ctx, s, "by=user", `[data-test="spend-table"]`)
	get(t, ctx, "find carol's spend", chromedp.Poll[string](rowSpend("carol"), chromedp.WithPollingTimeout(stepTimeout)))
	run(t, ctx, "wait for the logs", visible(fresh+` [data-test="spend-logs"]`))
	page := text(t, ctx, fresh)
	if strings.Contains(page, "dave") || strings.Contains(page, theirs) || !strings.Contains(page, mine) {
		t.Errorf("carol's spend page: %q, want her request %s and nothing of dave's", page, mine)
	}
	openSpend(t, ctx, s, "request_id="+theirs, `[data-test="logs-total"]`)
	if got := text(t, ctx, fresh+` [data-test="logs-total"]`); got != "0 logs" {
		t.Errorf("carol searching dave's request: %q, want 0 logs", got)
	}
	if got := text(t, ctx, fresh); strings.Contains(got, theirs) || strings.Contains(got, "dave") {
		t.Errorf("carol searching dave's request: %q, want no trace of it", got)
	}
}
