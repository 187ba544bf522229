package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
)

func TestPassThroughOpenAI(t *testing.T) {
	var got map[string]any
	var auth string
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			t.Errorf("upstream path = %s", r.URL.Path)
		}
		auth = r.Header.Get("Authorization")
		_ = json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-123")
		io.WriteString(w, completion)
	})
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: smart
    litellm_params: {model: openai/gpt-4o, api_base: %s/v1, api_key: os.environ/K, temperature: 0.3, input_cost_per_token: 0.001, output_cost_per_token: 0.002}
    model_info: {id: dep-1}
`, up.URL), map[string]string{"K": "sk-upstream-secret"})
	body := `{"model":"smart","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"response_format":{"type":"json_object"},"logprobs":true,"seed":7,"metadata":{"tags":["a"]},"fallbacks":[]}`
	resp := f.post(t, "/v1/chat/completions", "", body)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	if out != completion {
		t.Errorf("response body changed:\n got %s\nwant %s", out, completion)
	}
	if got["model"] != "gpt-4o" {
		t.Errorf("upstream model = %v, want the provider model gpt-4o", got["model"])
	}
	for _, k := range []string{"tools", "response_format", "logprobs", "seed"} {
		if _, ok := got[k]; !ok {
			t.Errorf("field %q not passed through: %v", k, got)
		}
	}
	for _, k := range []string{"metadata", "fallbacks"} {
		if _, ok := got[k]; ok {
			t.Errorf("gateway-only field %q sent upstream", k)
		}
	}
	if got["temperature"] != 0.3 {
		t.Errorf("deployment default temperature not applied: %v", got["temperature"])
	}
	if auth != "Bearer sk-upstream-secret" {
		t.Errorf("upstream auth = %q", auth)
	}
	h := resp.Header
	for k, want := range map[string]string{
		"X-Litellm-Model-Id": "dep-1", "X-Litellm-Model-Group": "smart", "X-Litellm-Model-Api-Base": up.URL + "/v1",
		"X-Litellm-Attempted-Retries": "0", "X-Litellm-Attempted-Fallbacks": "0", "X-Litellm-Response-Cost": "0.014",
		"Llm_provider-X-Request-Id": "req-123",
	} {
		if h.Get(k) != want {
			t.Errorf("header %s = %q, want %q", k, h.Get(k), want)
		}
	}
	if len(h.Get("X-Litellm-Call-Id")) != 36 {
		t.Errorf("call id = %q", h.Get("X-Litellm-Call-Id"))
	}
}

func TestAzure(t *testing.T) {
	var path, query, apiKey, authz string
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		path, query, apiKey, authz = r.URL.Path, r.URL.RawQuery, r.Header.Get("Api-Key"), r.Header.Get("Authorization")
		io.WriteString(w, completion)
	})
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: gpt-4o
    litellm_params: {model: azure/my-gpt4o-deployment, api_base: %s/, api_key: az-secret, api_version: "2024-02-01"}
`, up.URL), nil)
	resp := f.post(t, "/chat/completions", "", `{"model":"gpt-4o","messages":[]}`)
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	if path != "/openai/deployments/my-gpt4o-deployment/chat/completions" || query != "api-version=2024-02-01" {
		t.Errorf("azure url = %s?%s", path, query)
	}
	if apiKey != "az-secret" || authz != "" {
		t.Errorf("azure auth: api-key=%q authorization=%q", apiKey, authz)
	}
}

func TestUpstreamErrors(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		header     map[string]string
		wantStatus int
		wantCode   string
		retryAfter string
	}{
		{"bad request", 400, `{"error":{"message":"bad param 'foo'","type":"invalid_request_error","code":null}}`, nil, 400, "upstream_bad_request", ""},
		{"context window", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}`, nil, 400, "context_length_exceeded", ""},
		{"content filter", 400, `{"error":{"message":"filtered","code":"content_filter"}}`, nil, 400, "content_policy_violation", ""},
		{"upstream auth", 401, `{"error":{"message":"Incorrect API key provided: sk-upstream-secret"}}`, nil, 502, "upstream_auth_error", ""},
		{"rate limited", 429, `{"error":{"message":"slow down"}}`, map[string]string{"Retry-After": "7"}, 429, "upstream_rate_limited", "7"},
		{"server error", 500, `oops`, nil, 502, "upstream_server_error", ""},
		{"unavailable", 503, `{"error":{"message":"overloaded"}}`, nil, 503, "upstream_server_error", ""},
		{"gateway timeout", 504, ``, nil, 504, "upstream_timeout", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, api_key: sk-upstream-secret}
router_settings: {num_retries: 0}
`, up.URL), nil)
			resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","messages":[]}`)
			out := gatewaytest.ReadAll(t, resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.wantStatus, out)
			}
			_, _, code := openAIError(t, out)
			if code != tt.wantCode {
				t.Errorf("code = %q, want %q (%s)", code, tt.wantCode, out)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if strings.Contains(out, "sk-upstream-secret") || strings.Contains(f.logs.String(), "sk-upstream-secret") {
				t.Errorf("provider key leaked: body %s", out)
			}
		})
	}
}

func TestAttemptTimeout(t *testing.T) {
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices a gone client only after the body is read
		<-r.Context().Done()        // never answers
	})
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, timeout: 0.05}
router_settings: {num_retries: 0}
`, up.URL), nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","messages":[]}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 504 {
		t.Fatalf("status = %d: %s", resp.StatusCode, out)
	}
}

// TestUpstreamInvalidJSON: a 200 whose body is not JSON (cut short) is the
// provider's failure, a 502 that the router retries or falls back from, and
// is not billed, as LiteLLM raises APIError for it.
func TestUpstreamInvalidJSON(t *testing.T) {
	bad := gatewaytest.Answering(t, 200, "application/json", `{"id":"x","choices":[`)
	good := gatewaytest.Answering(t, 200, "application/json", completion)
	done := make(chan *Completion, 1)
	f := completionFixture(t, fmt.Sprintf(`model_list:
  - model_name: bad
    litellm_params: {model: openai/gpt-4o-mini, api_base: %q, api_key: sk-up}
  - model_name: good
    litellm_params: {model: openai/gpt-4o, api_base: %q, api_key: sk-up}
router_settings: {num_retries: 1, fallbacks: [{bad: [good]}]}
general_settings: {master_key: sk-master}
`, bad.URL+"/v1", good.URL+"/v1"), func(_ context.Context, c *Completion) { done <- c })

	resp := f.post(t, "/v1/chat/completions", "sk-master", `{"model":"bad","messages":[{"role":"user","content":"hi"}]}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	c := <-done
	if resp.StatusCode != 200 || !strings.Contains(out, `"content":"hi"`) {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	if bad.Calls.Load() != 2 || good.Calls.Load() != 1 || c.Retries != 1 || c.Fallbacks != 1 {
		t.Fatalf("calls bad %d good %d, retries %d fallbacks %d; want 2, 1, 1, 1", bad.Calls.Load(), good.Calls.Load(), c.Retries, c.Fallbacks)
	}
	if c.Usage.TotalTokens != 12 || c.UsageEstimated {
		t.Fatalf("usage %+v (estimated %v): the invalid answers were billed", c.Usage, c.UsageEstimated)
	}

	resp = f.post(t, "/v1/chat/completions", "sk-master", `{"model":"bad","messages":[{"role":"user","content":"hi"}],"disable_fallbacks":true}`)
	out = gatewaytest.ReadAll(t, resp.Body)
	c = <-done
	if resp.StatusCode != 502 {
		t.Fatalf("status %d, want 502: %s", resp.StatusCode, out)
	}
	if msg, _, code := openAIError(t, out); code != "upstream_server_error" || !strings.Contains(msg, "not valid JSON") {
		t.Fatalf("error %s: %s", code, msg)
	}
	if c.HasUsage || resp.Header.Get("X-Litellm-Response-Cost") != "" {
		t.Fatalf("an invalid answer was billed: %+v", c.Usage)
	}
}
