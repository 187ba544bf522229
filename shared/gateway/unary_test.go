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
	"github.com/sluice-gw/sluice/shared/wire"
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

const textCompletion = `{"id":"cmpl-1","object":"text_completion","created":1,"model":"gpt-3.5-turbo-instruct","choices":[{"text":"hi there","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`

// upstreamAt answers body at path (and records what it was sent).
type seen struct {
	path, query, model, apiKey, contentType string
	body                                    []byte
}

func recordingUpstream(t *testing.T, contentType, answer string) (*seen, string) {
	s := &seen{}
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		s.path, s.query, s.apiKey, s.contentType = r.URL.Path, r.URL.RawQuery, r.Header.Get("Api-Key"), r.Header.Get("Content-Type")
		s.body, _ = io.ReadAll(r.Body)
		var m struct{ Model string }
		if json.Unmarshal(s.body, &m) == nil {
			s.model = m.Model
		}
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, answer)
	})
	return s, up.URL
}

// Legacy text completions pass through to an OpenAI-compatible deployment at
// every path LiteLLM serves them on, with the model rewritten, and are
// billed from the usage they report.
func TestCompletionsPassThrough(t *testing.T) {
	s, url := recordingUpstream(t, "application/json", textCompletion)
	f := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: instruct
    litellm_params: {model: openai/gpt-3.5-turbo-instruct, api_base: %s/v1, api_key: sk-up, input_cost_per_token: 0.001, output_cost_per_token: 0.002}
`, url), nil)
	for _, path := range []string{"/v1/completions", "/completions", "/openai/v1/completions"} {
		resp := f.post(t, path, "", `{"model":"instruct","prompt":"say hi","max_tokens":5}`)
		out := gatewaytest.ReadAll(t, resp.Body)
		if resp.StatusCode != 200 || out != textCompletion {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, out)
		}
		if s.path != "/v1/completions" || s.model != "gpt-3.5-turbo-instruct" {
			t.Errorf("%s: upstream got %s model %q", path, s.path, s.model)
		}
		c := f.completion(t, resp)
		if c.Operation != wire.OpCompletions || c.Usage.TotalTokens != 7 || !c.CostKnown || c.CostNanos != 9_000_000 {
			t.Errorf("%s: completion %v usage %+v cost %d known %v", path, c.Operation, c.Usage, c.CostNanos, c.CostKnown)
		}
		if ev := c.SpendEvent(); ev.CallType != "text_completion" {
			t.Errorf("call_type %q", ev.CallType)
		}
	}
}

// completionEvents is a streamed text completion of "hi" with its usage
// (3 + 1 tokens), as OpenAI sends it.
const completionEvents = "data: {\"id\":\"c\",\"object\":\"text_completion\",\"created\":1,\"model\":\"gpt-3.5-turbo-instruct\",\"choices\":[{\"text\":\"hi\",\"index\":0,\"finish_reason\":null}]}\n\n" +
	"data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"text\":\"\",\"index\":0,\"finish_reason\":\"stop\"}]}\n\n" +
	"data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n" +
	"data: [DONE]\n\n"

// A streamed text completion is forwarded event by event; its usage chunk,
// asked for by the gateway, is billed and not forwarded.
func TestCompletionsStream(t *testing.T) {
	s, url := recordingUpstream(t, "text/event-stream", completionEvents)
	f := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: instruct
    litellm_params: {model: openai/gpt-3.5-turbo-instruct, api_base: %s, input_cost_per_token: 0.001, output_cost_per_token: 0.002}
`, url), nil)
	resp := f.post(t, "/v1/completions", "", `{"model":"instruct","prompt":"x","stream":true}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(out, `"text":"hi"`) || strings.Contains(out, `"usage"`) || !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Fatalf("%d %q", resp.StatusCode, out)
	}
	if !strings.Contains(string(s.body), `"include_usage":true`) {
		t.Errorf("usage not asked for: %s", s.body)
	}
	c := f.completion(t, resp)
	if !c.Stream || c.Usage.TotalTokens != 4 || c.UsageEstimated || c.CostNanos != 5_000_000 {
		t.Errorf("stream completion: %+v cost %d", c.Usage, c.CostNanos)
	}
}

// Only OpenAI-compatible and Azure deployments serve the pass-through
// operations: another provider is a clear 400, never a chat call.
func TestCompletionsRefusedByTranslatingProvider(t *testing.T) {
	f := newFixture(t, `model_list:
  - model_name: claude
    litellm_params: {model: anthropic/claude-3-5-haiku-20241022, api_key: k}
`, nil)
	resp := f.post(t, "/v1/completions", "", `{"model":"claude","prompt":"x"}`)
	if msg := wantError(t, resp, 400); !strings.Contains(msg, "does not serve /completions") {
		t.Errorf("message %q", msg)
	}
}

// The Azure OpenAI routes take the model from the path, the key from the
// api-key header Azure SDKs send, and accept api-version.
func TestAzureRoutes(t *testing.T) {
	s, url := recordingUpstream(t, "application/json", completion)
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: gpt-4o
    litellm_params: {model: azure/prod-4o, api_base: %s, api_key: az-upstream, api_version: "2024-10-21"}
general_settings: {master_key: sk-master}
`, url), nil)
	for _, tt := range []struct{ path, body, upstream string }{
		{"/openai/deployments/gpt-4o/chat/completions?api-version=2024-06-01", `{"messages":[{"role":"user","content":"x"}]}`, "/openai/deployments/prod-4o/chat/completions"},
		{"/openai/deployments/gpt-4o/completions?api-version=2024-06-01", `{"model":"other","prompt":"x"}`, "/openai/deployments/prod-4o/completions"},
		{"/openai/deployments/gpt-4o/embeddings", `{"input":"x"}`, "/openai/deployments/prod-4o/embeddings"},
	} {
		resp := f.send(t, http.MethodPost, tt.path, strings.NewReader(tt.body), "api-key", "sk-master")
		out := gatewaytest.ReadAll(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tt.path, resp.StatusCode, out)
		}
		if s.path != tt.upstream || s.query != "api-version=2024-10-21" || s.apiKey != "az-upstream" || s.model != "prod-4o" {
			t.Errorf("%s: upstream %s?%s key %q model %q", tt.path, s.path, s.query, s.apiKey, s.model)
		}
	}
	resp := f.send(t, http.MethodPost, "/openai/deployments/gpt-4o/chat/completions", strings.NewReader(`{"messages":[]}`), "api-key", "wrong")
	wantError(t, resp, 401)
	resp = f.post(t, "/openai/deployments/gpt-4o/files", "sk-master", `{}`)
	wantError(t, resp, 404)
}

// LiteLLM's batch completion: "model": "a,b" calls both models and answers
// the list of their responses in order, a failed one's error in its place;
// each is a request of its own (its spend and cost).
func TestBatchCompletion(t *testing.T) {
	f := newCostFixture(t, `model_list:
  - model_name: a
    litellm_params: {model: openai/gpt-4o, mock_response: "from a", input_cost_per_token: 0.001, output_cost_per_token: 0.001}
  - model_name: b
    litellm_params: {model: openai/gpt-4o-mini, mock_response: "from b", input_cost_per_token: 0.001, output_cost_per_token: 0.001}
`, nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"a, b,nope","messages":[{"role":"user","content":"x"}]}`)
	var out []map[string]any
	gatewaytest.Decode(t, resp.Body, &out)
	if resp.StatusCode != 200 || len(out) != 3 {
		t.Fatalf("%d %v", resp.StatusCode, out)
	}
	for i, want := range []string{"from a", "from b"} {
		b, _ := json.Marshal(out[i])
		if !strings.Contains(string(b), want) {
			t.Errorf("response %d: %s, want %q", i, b, want)
		}
	}
	if _, ok := out[2]["error"]; !ok {
		t.Errorf("unknown model's slot: %v", out[2])
	}
	models := map[string]bool{}
	for range 3 {
		c := <-f.done
		models[c.Model] = true
	}
	if !models["a"] || !models["b"] || !models["nope"] || len(f.done) != 0 {
		t.Errorf("completions for %v (%d more)", models, len(f.done))
	}

	resp = f.post(t, "/v1/chat/completions", "", `{"model":"nope,b","fastest_response":true,"messages":[{"role":"user","content":"x"}]}`)
	var one map[string]any
	gatewaytest.Decode(t, resp.Body, &one)
	if b, _ := json.Marshal(one); resp.StatusCode != 200 || !strings.Contains(string(b), "from b") {
		t.Errorf("fastest_response: %d %s", resp.StatusCode, b)
	}
	resp = f.post(t, "/v1/chat/completions", "", `{"model":"a,b","stream":true,"messages":[]}`)
	wantError(t, resp, 400)
}

// wantError checks resp is an OpenAI-style error of status and returns its
// message.
func wantError(t *testing.T, resp *http.Response, status int) string {
	t.Helper()
	body := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	msg, _, _ := openAIError(t, body)
	return msg
}
