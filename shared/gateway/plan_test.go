package gateway

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/router"
)

// TestResolveOnce: a request's model and its own fallbacks are resolved to
// their groups once (the plan, plan.go), whichever stages read them: model
// access of a restricted key, the strict-budget reservation, the router,
// a fallback walked, and the metrics of a request refused before any
// attempt. Counted by the router's OnResolve hook.
func TestResolveOnce(t *testing.T) {
	down := gatewaytest.Answering(t, 500, "application/json", `{"error":{"message":"down","type":"server_error"}}`)
	up := gatewaytest.Answering(t, 200, "application/json", completion)
	cfg := loadConfig(t, `model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: `+up.URL+`/v1, api_key: sk-up, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {max_output_tokens: 100}
  - model_name: broken
    litellm_params: {model: openai/y, api_base: `+down.URL+`/v1, api_key: sk-up, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
  - model_name: fb
    litellm_params: {model: openai/z, api_base: `+up.URL+`/v1, api_key: sk-up, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
router_settings: {num_retries: 0, model_group_alias: {a: m, b: broken}}
general_settings: {master_key: sk-master, strict_budgets: true}
`)
	ks := keys.NewMemory()
	budget := 10.0
	if err := ks.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret("sk-k"), Settings: keys.Settings{
		Models: []string{"a", "b", "m", "broken", "fb", "nowhere"}, Budget: keys.Budget{MaxBudget: &budget},
	}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	counts := map[string]int{}
	quiet := gatewaytest.Quiet()
	rt := router.New(cfg, router.Options{Logger: quiet, Sleep: noWait, OnResolve: func(model string) {
		mu.Lock()
		counts[model]++
		mu.Unlock()
	}})
	h := testHandler(Options{Config: cfg, Router: rt, Keys: ks, Limits: limits.NewMemory(), Logger: quiet,
		Metrics: metrics.New(metrics.Options{Prometheus: true})})
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"served", `{"model":"a","max_tokens":5,"fallbacks":["fb","nowhere"],"messages":[{"role":"user","content":"hi"}]}`, 200},
		{"served by a fallback", `{"model":"b","max_tokens":5,"fallbacks":["nowhere","fb"],"messages":[{"role":"user","content":"hi"}]}`, 200},
		{"refused by the reservation", `{"model":"b","fallbacks":["fb"],"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"no such model", `{"model":"nowhere","messages":[{"role":"user","content":"hi"}]}`, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(counts)
			rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-k", tc.body))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if len(counts) == 0 {
				t.Fatal("no resolution counted")
			}
			for model, n := range counts {
				if n != 1 {
					t.Errorf("%q resolved %d times, want once (all: %v)", model, n, counts)
				}
			}
		})
	}
}

// TestRecordsAllocateNothing: walking a principal's six records (model
// access, the admission scopes, the budget counters) allocates nothing.
func TestRecordsAllocateNothing(t *testing.T) {
	s := keys.Settings{Models: []string{"m"}}
	p := &Principal{
		Key: &keys.Key{Hash: "h", Settings: s}, Team: &keys.Team{ID: "t", Settings: s}, User: &keys.User{ID: "u", Settings: s},
		Member: &keys.Member{Group: keys.KindTeam, GroupID: "t", UserID: "u"}, EndUser: &keys.EndUser{ID: "e"}, Org: &keys.Organization{ID: "o", Settings: s},
	}
	var kinds []recordKind
	for r := range p.records {
		kinds = append(kinds, r.kind)
	}
	if len(kinds) != 6 {
		t.Fatalf("records walked %v, want all six", kinds)
	}
	n := testing.AllocsPerRun(100, func() {
		if !p.restricted() || allowModel(p, nil, "m", "m") != nil {
			t.Fatal("model access")
		}
		for r := range p.records {
			_ = r.settings.RPMLimit
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per walk, want 0", n)
	}
}
