package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keyauth"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/providers/messages"
	"github.com/sluice-gw/sluice/shared/router"
)

// TestResolveOnce: a request's model and its own fallbacks are resolved to
// their groups once (the plan, plan.go), whichever stages read them: model
// access of a restricted key, the strict-budget reservation, the router,
// a fallback walked, and the metrics of a request refused before any
// attempt. Counted by the router's OnResolve hook.
func TestResolveOnce(t *testing.T) {
	down, up := downAndUp(t)
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
	quiet := gatewaytest.Quiet()
	rt, counts := countingRouter(cfg)
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

// countingRouter is a router of cfg that counts each model's resolutions
// (router.Options.OnResolve) in counts.
func countingRouter(cfg *config.Config) (*router.Router, map[string]int) {
	var mu sync.Mutex
	counts := map[string]int{}
	rt := router.New(cfg, router.Options{Logger: gatewaytest.Quiet(), Sleep: noWait, OnResolve: func(model string) {
		mu.Lock()
		counts[model]++
		mu.Unlock()
	}})
	return rt, counts
}

// TestRecordsAllocateNothing: walking a principal's six records (model
// access, the admission scopes, the budget counters) allocates nothing.
func TestRecordsAllocateNothing(t *testing.T) {
	s := keys.Settings{Models: []string{"m"}}
	p := &Principal{Records: keyauth.Records{
		Key: &keys.Key{Hash: "h", Settings: s}, Team: &keys.Team{ID: "t", Settings: s}, User: &keys.User{ID: "u", Settings: s},
		Member: &keys.Member{Group: keys.KindTeam, GroupID: "t", UserID: "u"}, EndUser: &keys.EndUser{ID: "e"}, Org: &keys.Organization{ID: "o", Settings: s},
	}}
	var kinds []keyauth.Kind
	for r := range p.records {
		kinds = append(kinds, r.Kind)
	}
	if len(kinds) != 6 {
		t.Fatalf("records walked %v, want all six", kinds)
	}
	n := testing.AllocsPerRun(100, func() {
		if !p.restricted() || allowModel(p, nil, "m", "m") != nil {
			t.Fatal("model access")
		}
		for r := range p.records {
			_ = r.Settings.RPMLimit
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per walk, want 0", n)
	}
}

// TestCountTokensThroughTheStages: count_tokens is served by the request
// stages as an uncounted API (count.go): its model and its own fallbacks
// are resolved once (the plan; the old second pipeline let the router
// resolve the fallbacks again), a key at its rpm limit and under a strict
// budget it could not reserve is still answered, nothing is recorded
// (OnComplete), a fallback serves when the group fails, the estimate is
// flagged, the key's aliases apply, and its errors are Anthropic's with
// its own messages.
func TestCountTokensThroughTheStages(t *testing.T) {
	down, up := downAndUp(t)
	cfg := loadConfig(t, `model_list:
  - model_name: broken
    litellm_params: {model: anthropic/claude-y, api_base: `+down.URL+`, api_key: sk-up}
  - model_name: fb
    litellm_params: {model: openai/z, api_base: `+up.URL+`/v1, api_key: sk-up}
router_settings: {num_retries: 0, model_group_alias: {b: broken}}
general_settings: {master_key: sk-master, strict_budgets: true}
`)
	ks := keys.NewMemory()
	budget := 0.000001
	if err := ks.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret("sk-k"), Settings: keys.Settings{
		Models: []string{"b", "broken", "fb", "nowhere"}, RPMLimit: 1, Budget: keys.Budget{MaxBudget: &budget},
		Aliases: map[string]string{"short": "fb"},
	}}); err != nil {
		t.Fatal(err)
	}
	rt, counts := countingRouter(cfg)
	completed := 0
	h := testHandler(Options{Config: cfg, Router: rt, Keys: ks, Limits: limits.NewMemory(), Logger: gatewaytest.Quiet(),
		Metrics:    metrics.New(metrics.Options{Prometheus: true}),
		OnComplete: func(context.Context, *Completion) { completed++ }})
	const body = `{"model":"b","fallbacks":["nowhere","fb"],"messages":[{"role":"user","content":"hello there"}]}`
	for i := range 3 { // beyond the key's rpm limit of 1
		clear(counts)
		rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/messages/count_tokens", "sk-k", body))
		if rec.Code != http.StatusOK || gjson.Get(rec.Body.String(), "input_tokens").Int() <= 0 {
			t.Fatalf("count %d: status %d: %s", i, rec.Code, rec.Body)
		}
		if rec.Header().Get(messages.EstimateHeader) != "estimate" || rec.Header().Get("X-Litellm-Model-Group") != "fb" ||
			rec.Header().Get("X-Litellm-Attempted-Fallbacks") != "1" || rec.Header().Get("X-Litellm-Response-Cost") != "" {
			t.Errorf("count %d: headers %v", i, rec.Header())
		}
		for _, model := range []string{"b", "nowhere", "fb"} {
			if counts[model] != 1 {
				t.Errorf("count %d: %q resolved %d times, want once (all: %v)", i, model, counts[model], counts)
			}
		}
	}
	if completed != 0 {
		t.Errorf("OnComplete called %d times for count_tokens, want none (it is not recorded)", completed)
	}
	// The key's model aliases apply, as on /v1/messages (the second
	// pipeline did not apply them).
	rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/messages/count_tokens", "sk-k", `{"model":"short","messages":[{"role":"user","content":"hi"}]}`))
	if rec.Code != http.StatusOK || rec.Header().Get("X-Litellm-Model-Group") != "fb" {
		t.Errorf("a key's alias: status %d, group %q: %s", rec.Code, rec.Header().Get("X-Litellm-Model-Group"), rec.Body)
	}
	for _, tc := range []struct{ key, body, typ, msg string }{
		{"sk-k", `{"messages":[{"role":"user","content":"hi"}]}`, "invalid_request_error", "model: field required"},
		{"sk-k", `{"model":"x",`, "invalid_request_error", "invalid request body"},
		{"sk-wrong", body, "authentication_error", ""},
		{"sk-k", `{"model":"other","messages":[{"role":"user","content":"hi"}]}`, "", ""},
	} {
		rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/messages/count_tokens", tc.key, tc.body))
		got := rec.Body.String()
		if rec.Code < 400 || gjson.Get(got, "type").Str != "error" || (tc.typ != "" && gjson.Get(got, "error.type").Str != tc.typ) ||
			!strings.Contains(gjson.Get(got, "error.message").Str, tc.msg) {
			t.Errorf("%s: status %d: %s", tc.body, rec.Code, got)
		}
	}
	if completed != 0 {
		t.Errorf("OnComplete called %d times for refused count_tokens, want none", completed)
	}
}
