package gateway

import (
	"context"
	"net/http"
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
