package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
)

// TestEndUserRegion: an end user's allowed_model_region routes its
// requests only to deployments in that region (x-litellm-model-region
// names it), fallbacks included; with none, LiteLLM's 429 "No deployments
// available". Other end users and requests without one route as before.
func TestEndUserRegion(t *testing.T) {
	cfg := loadConfig(t, `model_list:
  - model_name: chat
    litellm_params: {model: mock/us, mock_response: hi, region_name: us}
    model_info: {id: chat-us}
  - model_name: chat
    litellm_params: {model: mock/eu, mock_response: hi, region_name: eu}
    model_info: {id: chat-eu}
  - model_name: us-only
    litellm_params: {model: mock/us, mock_response: hi, region_name: us}
    model_info: {id: us-only}
  - model_name: fb-us
    litellm_params: {model: mock/us, mock_response: hi, region_name: us}
    model_info: {id: fb-us}
  - model_name: with-fallback
    litellm_params: {model: mock/us, mock_response: hi, region_name: us}
    model_info: {id: wf-us}
router_settings:
  fallbacks: [{with-fallback: [fb-us, chat]}]
general_settings: {master_key: sk-master}
`)
	store, ctx := keys.NewMemory(), context.Background()
	for _, e := range []keys.EndUser{{ID: "eu-cust", AllowedModelRegion: "eu"}, {ID: "any-cust"}} {
		if err := store.EndUsers().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	f := serve(t, testHandler(Options{Config: cfg, Keys: store}))
	for _, tt := range []struct {
		user, model string
		status      int
		deployment  string
		region      string
	}{
		{"eu-cust", "chat", 200, "chat-eu", "eu"},
		{"eu-cust", "with-fallback", 200, "chat-eu", "eu"},
		{"eu-cust", "us-only", 429, "", ""},
		{"any-cust", "us-only", 200, "us-only", "us"},
		{"unregistered", "us-only", 200, "us-only", "us"},
	} {
		for range 5 { // the shuffle must never pick outside the region
			resp := f.post(t, "/v1/chat/completions", "sk-master", `{"model":"`+tt.model+`","user":"`+tt.user+`","messages":[{"role":"user","content":"hi"}]}`)
			body := gatewaytest.ReadAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("%s %s: status %d, want %d: %s", tt.user, tt.model, resp.StatusCode, tt.status, body)
			}
			if tt.status != 200 {
				if !strings.Contains(body, "No deployments available for selected model") {
					t.Fatalf("%s %s: body %s, want LiteLLM's no deployments available", tt.user, tt.model, body)
				}
				break
			}
			if got := resp.Header.Get("X-Litellm-Model-Id"); got != tt.deployment {
				t.Fatalf("%s %s: served by %q, want %q", tt.user, tt.model, got, tt.deployment)
			}
			if got := resp.Header.Get("X-Litellm-Model-Region"); got != tt.region {
				t.Fatalf("%s %s: x-litellm-model-region %q, want %q", tt.user, tt.model, got, tt.region)
			}
		}
	}
}
