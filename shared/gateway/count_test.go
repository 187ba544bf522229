package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/providers/messages"
	"github.com/sluice-gw/sluice/shared/router"
)

// TestCountTokensThroughTheStages: count_tokens is served by the request
// stages as an uncounted API (count.go): its model and its own fallbacks
// are resolved once (the plan; the old second pipeline let the router
// resolve the fallbacks again), a key at its rpm limit and under a strict
// budget it could not reserve is still answered, nothing is recorded
// (OnComplete), a fallback serves when the group fails, the estimate is
// flagged, and its errors are Anthropic's with its own messages.
func TestCountTokensThroughTheStages(t *testing.T) {
	down := gatewaytest.Answering(t, 500, "application/json", `{"error":{"message":"down","type":"server_error"}}`)
	up := gatewaytest.Answering(t, 200, "application/json", completion)
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
	}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	counts := map[string]int{}
	rt := router.New(cfg, router.Options{Logger: gatewaytest.Quiet(), Sleep: noWait, OnResolve: func(model string) {
		mu.Lock()
		counts[model]++
		mu.Unlock()
	}})
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
