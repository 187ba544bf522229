package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/providers"
	sresponses "github.com/sluice-gw/sluice/shared/responses"
	"github.com/sluice-gw/sluice/shared/router"
)

// TestResponsesChatOnlyServer: /v1/responses to an openai/ deployment whose
// server has no Responses route (a 404 as vLLM's, a 405) is translated
// through chat in the same attempt, and learnt: the following requests,
// streamed or not, make no second failing call. The failed call costs the
// deployment nothing: one attempt, no cooldown (allowed_fails 0 would cool
// it at once), so the next request is served by it.
func TestResponsesChatOnlyServer(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusMethodNotAllowed} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			up := gatewaytest.NewChatOnly(t)
			up.NoRoute = status
			cfg, err := config.Load([]byte(`
model_list:
  - model_name: llama
    litellm_params: {model: openai/llama-3.1-8b, api_base: `+up.URL+`/v1, api_key: none}
router_settings: {allowed_fails: 0, cooldown_time: 60}
`), nil)
			if err != nil {
				t.Fatal(err)
			}
			log := gatewaytest.Quiet()
			done := make(chan *gateway.Completion, 8)
			h := gateway.New(gateway.Options{Config: cfg, Router: router.New(cfg, router.Options{Logger: log}),
				Provider: providers.New(providers.NewHTTPClient()), Logger: log, Limits: limits.NewMemory(), Responses: sresponses.NewMemory(),
				OnComplete: func(_ context.Context, c *gateway.Completion) { done <- c }})
			srv := gatewaytest.Upstream(t, h.ServeHTTP)
			c := (&respGateway{url: srv.URL}).sdk("", nil)
			ctx := respCtx(t)
			params := responses.ResponseNewParams{Model: "llama", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}

			r, err := c.Responses.New(ctx, params)
			if err != nil {
				t.Fatalf("first request: %v", err)
			}
			if r.OutputText() != "Hello from chat." || r.Usage.InputTokens != 30 {
				t.Errorf("response: %s", r.RawJSON())
			}
			if comp := <-done; comp.Attempts != 1 || comp.Err != nil {
				t.Errorf("attempts %d, err %v: the missing route was counted as an attempt", comp.Attempts, comp.Err)
			}
			st := c.Responses.NewStreaming(ctx, params)
			var text strings.Builder
			for st.Next() {
				if ev := st.Current(); ev.Type == "response.output_text.delta" {
					text.WriteString(ev.Delta)
				}
			}
			if st.Err() != nil || text.String() != "Hello from chat." {
				t.Errorf("stream: %q %v", text.String(), st.Err())
			}
			if _, err := c.Responses.New(ctx, params); err != nil {
				t.Errorf("third request: %v", err)
			}
			if got := strings.Join(up.Paths(), " "); got != "/v1/responses /v1/chat/completions /v1/chat/completions /v1/chat/completions" {
				t.Errorf("the server got %s, want one failing /v1/responses, then chat only", got)
			}
		})
	}
}
