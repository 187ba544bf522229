package adminapi_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// TestSpendLogFilters: /spend/logs narrows by team_id, model (group or
// model) and status_filter, as LiteLLM's /spend/logs/ui; a status_filter
// other than success or failure is a 400 naming it. And
// /user/daily/activity breaks down by user in "entities", as LiteLLM's.
// On both stores.
func TestSpendLogFilters(t *testing.T) {
	for _, store := range []string{app.StoreMemory, app.StoreDynamoDB} {
		t.Run(store, func(t *testing.T) {
			gw := build(t, store, nil)
			c := client{t, gw.HTTP}
			const m = "sk-master-test"
			now := time.Now().UTC()
			tag := t.Name() + "-"
			ev := func(id, user, team, group string, st spend.Status) spend.Event {
				return spend.Event{Version: spend.Version, RequestID: tag + id, Start: now.Add(-time.Second), End: now, Status: st,
					KeyHash: keys.HashSecret("sk-f-" + user), UserID: user, TeamID: team, ModelGroup: group, Provider: "openai",
					Model: group + "-2024", CallType: "chat", PromptTokens: 3, CompletionTokens: 2, Cost: 1_000_000, CostKnown: true}
			}
			if _, err := gw.Spend.Record(context.Background(), []spend.Event{
				ev("f1", "ann", "t1", "gpt-4o", spend.StatusSuccess),
				ev("f2", "bob", "t2", "claude", spend.StatusFailure),
				ev("f3", "bob", "t1", "claude", spend.StatusDisconnected),
			}); err != nil {
				t.Fatal(err)
			}
			for _, q := range []struct {
				query string
				want  []string
			}{
				{"team_id=t1", []string{"f1", "f3"}},
				{"model=claude", []string{"f2", "f3"}},
				{"model=gpt-4o-2024", []string{"f1"}},
				{"status_filter=success", []string{"f1"}},
				{"status_filter=failure", []string{"f2", "f3"}},
				{"team_id=t1&model=claude&status_filter=failure", []string{"f3"}},
				{"team_id=t9", []string{}},
			} {
				out := c.must(m, "GET", "/spend/logs?page=1&page_size=100&"+q.query, "")
				var got []string
				for _, row := range out["data"].([]any) {
					got = append(got, row.(map[string]any)["request_id"].(string)[len(tag):])
				}
				slices.Sort(got)
				if !slices.Equal(got, q.want) && !(len(got) == 0 && len(q.want) == 0) {
					t.Errorf("%s: %v, want %v", q.query, got, q.want)
				}
			}
			c.errParam(m, "GET", "/spend/logs?status_filter=ok", "", 400, "status_filter")

			act := c.must(m, "GET", "/user/daily/activity", "")
			results := act["results"].([]any)
			if len(results) != 1 {
				t.Fatalf("user/daily/activity: %v", act)
			}
			ent, _ := results[0].(map[string]any)["breakdown"].(map[string]any)["entities"].(map[string]any)
			reqs := func(user string) any {
				e, _ := ent[user].(map[string]any)
				mt, _ := e["metrics"].(map[string]any)
				return mt["api_requests"]
			}
			if len(ent) != 2 || reqs("ann") != 1.0 || reqs("bob") != 2.0 {
				t.Errorf("user/daily/activity entities = %v, want ann with 1 request and bob with 2", ent)
			}
		})
	}
}
