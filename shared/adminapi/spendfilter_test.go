package adminapi_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/adminapi"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// TestSpendLogFilters: /spend/logs narrows by team_id, model (group or
// model) and status_filter, as LiteLLM's /spend/logs/ui, paged or not; a
// status_filter other than success or failure is a 400 naming it. And
// /user/daily/activity breaks down by user in "entities", as LiteLLM's.
func TestSpendLogFilters(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	ks := keys.NewMemory()
	sp := spend.NewMemory(ks)
	now := time.Now().UTC()
	fx.h = adminapi.New(adminapi.Options{MasterKey: masterKey, Keys: ks, Spend: sp, Now: func() time.Time { return now }})
	ev := func(id, user, team, group string, st spend.Status) spend.Event {
		return spend.Event{Version: spend.Version, RequestID: id, Start: now.Add(-time.Second), End: now, Status: st,
			KeyHash: keys.HashSecret("sk-f-" + user), UserID: user, TeamID: team, ModelGroup: group, Provider: "openai",
			Model: group + "-2024", CallType: "chat", PromptTokens: 3, CompletionTokens: 2, Cost: 1_000_000, CostKnown: true}
	}
	if _, err := sp.Record(ctx, []spend.Event{
		ev("f1", "ann", "t1", "gpt-4o", spend.StatusSuccess),
		ev("f2", "bob", "t2", "claude", spend.StatusFailure),
		ev("f3", "bob", "t1", "claude", spend.StatusDisconnected),
	}); err != nil {
		t.Fatal(err)
	}
	ids := func(path string) []string {
		t.Helper()
		w := fx.do("master", "GET", path, "")
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		var rows []map[string]any
		var paged struct{ Data []map[string]any }
		if err := json.Unmarshal(w.Body.Bytes(), &rows); err != nil {
			if err := json.Unmarshal(w.Body.Bytes(), &paged); err != nil {
				t.Fatalf("%s: %v in %s", path, err, w.Body)
			}
			rows = paged.Data
		}
		out := make([]string, 0, len(rows))
		for _, r := range rows {
			out = append(out, r["request_id"].(string))
		}
		return out
	}
	for _, c := range []struct {
		query string
		want  map[string]bool
	}{
		{"team_id=t1", map[string]bool{"f1": true, "f3": true}},
		{"model=claude", map[string]bool{"f2": true, "f3": true}},
		{"model=gpt-4o-2024", map[string]bool{"f1": true}},
		{"status_filter=success", map[string]bool{"f1": true}},
		{"status_filter=failure", map[string]bool{"f2": true, "f3": true}},
		{"team_id=t1&model=claude&status_filter=failure&page=1&page_size=10", map[string]bool{"f3": true}},
		{"team_id=t9", map[string]bool{}},
	} {
		got := ids("/spend/logs?" + c.query)
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.query, got, c.want)
			continue
		}
		for _, id := range got {
			if !c.want[id] {
				t.Errorf("%s: %v, want %v", c.query, got, c.want)
			}
		}
	}
	if w := fx.do("master", "GET", "/spend/logs?status_filter=ok", ""); w.Code != 400 || !json.Valid(w.Body.Bytes()) {
		t.Errorf("status_filter=ok: %d %s, want 400", w.Code, w.Body)
	} else {
		var e struct{ Error struct{ Param string } }
		_ = json.Unmarshal(w.Body.Bytes(), &e)
		if e.Error.Param != "status_filter" {
			t.Errorf("status_filter=ok: param %q, want status_filter", e.Error.Param)
		}
	}

	w := fx.do("master", "GET", "/user/daily/activity", "")
	var act struct {
		Results []struct {
			Breakdown struct {
				Entities map[string]struct{ Metrics map[string]float64 }
			}
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &act); err != nil || len(act.Results) != 1 {
		t.Fatalf("user/daily/activity: %d %s", w.Code, w.Body)
	}
	ent := act.Results[0].Breakdown.Entities
	if len(ent) != 2 || ent["ann"].Metrics["api_requests"] != 1 || ent["bob"].Metrics["api_requests"] != 2 {
		t.Errorf("user/daily/activity entities = %+v, want ann 1 request and bob 2", ent)
	}
}
