package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/wire"
)

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
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+tt.path, strings.NewReader(tt.body))
		req.Header.Set("api-key", "sk-master")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out := gatewaytest.ReadAll(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tt.path, resp.StatusCode, out)
		}
		if s.path != tt.upstream || s.query != "api-version=2024-10-21" || s.apiKey != "az-upstream" || s.model != "prod-4o" {
			t.Errorf("%s: upstream %s?%s key %q model %q", tt.path, s.path, s.query, s.apiKey, s.model)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/openai/deployments/gpt-4o/chat/completions", strings.NewReader(`{"messages":[]}`))
	req.Header.Set("api-key", "wrong")
	resp, _ := http.DefaultClient.Do(req)
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
