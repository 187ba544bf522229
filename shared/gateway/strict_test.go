package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
)

// The spend queue's redelivery window (template.yaml): a failed consumer
// batch comes back after the visibility timeout, up to maxReceiveCount
// receives, each handled within the spend function's timeout.
const (
	queueVisibility  = 180 * time.Second
	queueMaxReceives = 5
	spendFnTimeout   = 30 * time.Second
)

// A strict-budget hold outlives the request (its deadline, or the router's
// timeout) by limits.HoldGrace, which covers the queue's redelivery window: a
// spend event delivered late still finds its hold, so its cost replaces
// the reservation instead of landing on top of spend admitted since the
// sweeper released it.
func TestHoldOutlivesRedelivery(t *testing.T) {
	if w := queueMaxReceives*queueVisibility + spendFnTimeout; limits.HoldGrace < w {
		t.Fatalf("limits.HoldGrace %v shorter than the queue's redelivery window %v", limits.HoldGrace, w)
	}
	up := gatewaytest.Answering(t, http.StatusOK, "", `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
	cfg := loadConfig(t, `model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: `+up.URL+`, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
general_settings: {master_key: sk-master, strict_budgets: true}
`)
	ks := keys.NewMemory()
	budget := 10.0
	if err := ks.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret("sk-strict"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	quiet := gatewaytest.Quiet()
	var holds []*limits.Hold
	h := New(Options{
		Config: cfg, Router: router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: quiet}),
		Provider: providers.New(providers.NewHTTPClient()), Keys: ks, Limits: limits.NewMemory(),
		Now: func() time.Time { return now }, Logger: quiet,
		OnComplete: func(_ context.Context, c *Completion) { holds = append(holds, c.Hold) },
	})
	for _, tc := range []struct {
		name     string
		deadline time.Duration // 0: none, the router's timeout bounds the request
		want     time.Duration
	}{
		{"router timeout", 0, cfg.Router.Timeout},
		{"request deadline", 40 * time.Second, 40 * time.Second},
	} {
		holds = nil
		ctx := context.Background()
		if tc.deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, now.Add(tc.deadline))
			defer cancel()
		}
		rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-strict",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`).WithContext(ctx))
		if rec.Code != http.StatusOK || len(holds) != 1 || holds[0] == nil {
			t.Fatalf("%s: status %d, holds %v: %s", tc.name, rec.Code, holds, rec.Body)
		}
		if got, want := holds[0].Expires, now.Add(tc.want+limits.HoldGrace); !got.Equal(want) {
			t.Errorf("%s: hold expires %v after admission, want %v (the request's bound + limits.HoldGrace)", tc.name, got.Sub(now), want.Sub(now))
		}
	}
}

// Hostile max_tokens and n: numbers whose product or sum wraps an int64.

const okChat = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`

// hostileHandler is a gateway over one priced deployment (with modelInfo)
// and a memory key store holding key sk-k with settings s.
func hostileHandler(t *testing.T, up string, modelInfo, general string, s keys.Settings) (*Handler, *[]*limits.Hold) {
	t.Helper()
	cfg := loadConfig(t, `model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: `+up+`, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
`+modelInfo+`general_settings: {master_key: sk-master`+general+`}
`)
	ks := keys.NewMemory()
	if err := ks.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret("sk-k"), Settings: s}); err != nil {
		t.Fatal(err)
	}
	quiet := gatewaytest.Quiet()
	var holds []*limits.Hold
	h := New(Options{
		Config: cfg, Router: router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: quiet, Sleep: noWait}),
		Provider: providers.New(providers.NewHTTPClient()), Keys: ks, Limits: limits.NewMemory(), Logger: quiet,
		OnComplete: func(_ context.Context, c *Completion) { holds = append(holds, c.Hold) },
	})
	return h, &holds
}

// A max_tokens times n that overflows an int64 reserves the saturated
// worst case, so a strict budget refuses it; it used to wrap to 0 (only the
// prompt reserved, the request served past the budget) or below 0 (a 500).
func TestStrictHostileMaxTokens(t *testing.T) {
	up := gatewaytest.Answering(t, http.StatusOK, "", okChat)
	budget := 0.05
	h, _ := hostileHandler(t, up.URL, "", ", strict_budgets: true", keys.Settings{Budget: keys.Budget{MaxBudget: &budget}})
	for _, body := range []string{
		`{"model":"m","max_tokens":4611686018427387904,"n":4,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":4611686018427387904,"n":2,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_completion_tokens":9223372036854775807,"n":128,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":1e300,"messages":[{"role":"user","content":"hi"}]}`,
	} {
		rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-k", body))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "budget_exceeded") {
			t.Errorf("%s: status %d, want 400 budget_exceeded: %s", body, rec.Code, rec.Body)
		}
	}
	if n := up.Calls.Load(); n != 0 {
		t.Errorf("the upstream was called %d times under a $0.05 budget", n)
	}
}

// A max_tokens above every deployment's output cap is clamped to it for
// the reservation: the request is served, its hold priced at the cap.
func TestStrictMaxTokensClampedToCap(t *testing.T) {
	up := gatewaytest.Answering(t, http.StatusOK, "", okChat)
	budget := 1.0
	h, holds := hostileHandler(t, up.URL, "    model_info: {max_output_tokens: 100}\n", ", strict_budgets: true", keys.Settings{Budget: keys.Budget{MaxBudget: &budget}})
	body := `{"model":"m","max_tokens":4611686018427387904,"n":4,"messages":[{"role":"user","content":"hi"}]}`
	rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-k", body))
	if rec.Code != http.StatusOK || len(*holds) != 1 || (*holds)[0] == nil {
		t.Fatalf("status %d, holds %v: %s", rec.Code, *holds, rec.Body)
	}
	want := limits.Price{Input: 1e-6, Output: 2e-6}.Reserve(int64(len(body)), 400)
	if got := (*holds)[0].Amount; got != want {
		t.Errorf("hold %d nano-USD, want %d (max_tokens clamped to 100, times n 4)", got, want)
	}
}

// A huge max_tokens at a key with an rpm or tpm limit is not a 500 (the
// token estimate wrapped negative): with only an rpm limit it is served;
// with a tpm limit it is refused as over it, unless the deployment's
// output cap brings the estimate within it.
func TestHugeMaxTokensAtLimitedKey(t *testing.T) {
	for _, tc := range []struct {
		name      string
		modelInfo string
		s         keys.Settings
		want      int
	}{
		{"rpm", "", keys.Settings{RPMLimit: 100}, http.StatusOK},
		{"tpm", "", keys.Settings{TPMLimit: 100000}, http.StatusTooManyRequests},
		{"tpm, capped deployment", "    model_info: {max_output_tokens: 100}\n", keys.Settings{TPMLimit: 100000}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := gatewaytest.Answering(t, http.StatusOK, "", okChat)
			h, _ := hostileHandler(t, up.URL, tc.modelInfo, "", tc.s)
			for _, body := range []string{
				`{"model":"m","max_tokens":9223372036854775807,"messages":[{"role":"user","content":"hi"}]}`,
				`{"model":"m","max_tokens":4611686018427387904,"n":4,"messages":[{"role":"user","content":"hi"}]}`,
			} {
				rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-k", body))
				if rec.Code != tc.want {
					t.Errorf("%s: status %d, want %d: %s", body, rec.Code, tc.want, rec.Body)
				}
			}
		})
	}
}

// n above 128 is refused with a 400 naming n, as OpenAI does.
func TestNAbove128(t *testing.T) {
	up := gatewaytest.Answering(t, http.StatusOK, "", okChat)
	h, _ := hostileHandler(t, up.URL, "", "", keys.Settings{})
	rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-k",
		`{"model":"m","n":129,"messages":[{"role":"user","content":"hi"}]}`))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"param":"n"`) {
		t.Errorf("status %d, want 400 naming n: %s", rec.Code, rec.Body)
	}
	if up.Calls.Load() != 0 {
		t.Error("n 129 reached the upstream")
	}
}
