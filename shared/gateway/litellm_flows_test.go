package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/tidwall/gjson"
)

// LiteLLM's tests/test_fallbacks.py, test_chat_completion_with_retries:
// mock_testing_rate_limit_error fails the first attempt only (LiteLLM
// raises it once, before its first call), the retry serves, and the answer
// says x-litellm-attempted-retries: 1 and x-litellm-max-retries: the
// deployment's num_retries (issue 31).
func TestLiteLLMRetryHeaders(t *testing.T) {
	up := newRecording(t, 0)
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: fake-openai-endpoint-4
    litellm_params: {model: openai/gpt-4o, api_key: k, api_base: %s, num_retries: 50}
router_settings: {retry_after: 0, disable_cooldowns: true}
`, up.srv.URL), nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"fake-openai-endpoint-4","messages":[{"role":"user","content":"hi"}],"mock_testing_rate_limit_error":true}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 200 || up.calls() != 1 {
		t.Fatalf("status %d, upstream calls %d: %s", resp.StatusCode, up.calls(), out)
	}
	for name, want := range map[string]string{"X-Litellm-Attempted-Retries": "1", "X-Litellm-Max-Retries": "50", "X-Litellm-Attempted-Fallbacks": "0"} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	// Without a retry, no x-litellm-max-retries (the warm path's headers stay as they were).
	resp = f.post(t, "/v1/chat/completions", "", `{"model":"fake-openai-endpoint-4","messages":[]}`)
	gatewaytest.ReadAll(t, resp.Body)
	if resp.Header.Get("X-Litellm-Attempted-Retries") != "0" || resp.Header.Values("X-Litellm-Max-Retries") != nil {
		t.Errorf("plain call: retries %q max %q", resp.Header.Get("X-Litellm-Attempted-Retries"), resp.Header.Get("X-Litellm-Max-Retries"))
	}
}

// LiteLLM's test_chat_completion_with_timeout(_from_request): the answer
// names the timeout its attempt ran under, the deployment's ("1.0", as
// Python prints a float) or the request's x-litellm-timeout (issue 31).
func TestLiteLLMTimeoutHeader(t *testing.T) {
	f := newFixture(t, `model_list:
  - model_name: fake-openai-endpoint-5
    litellm_params: {model: openai/gpt-4o, api_key: k, api_base: "http://127.0.0.1:9", mock_timeout: true, timeout: 1}
router_settings: {disable_cooldowns: true}
`, nil)
	for _, tc := range []struct{ header, want string }{{"", "1.0"}, {"0.001", "0.001"}} {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"fake-openai-endpoint-5","messages":[],"num_retries":0,"mock_timeout":true}`))
		if tc.header != "" {
			req.Header.Set("x-litellm-timeout", tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out := gatewaytest.ReadAll(t, resp.Body)
		if resp.StatusCode == 200 {
			t.Fatalf("mock_timeout answered 200: %s", out)
		}
		if got := resp.Header.Get("X-Litellm-Timeout"); got != tc.want {
			t.Errorf("header %q: x-litellm-timeout = %q, want %q", tc.header, got, tc.want)
		}
	}
}

// LiteLLM's test_chat_completion_client_fallbacks_with_custom_message: a
// request's fallback may be an object naming the model and the fields its
// call replaces ("messages"); the configured form ({"group": [fallbacks]})
// is read as well (issue 31). (A key without the fallback's model is
// refused: TestFallbacksAccess.)
func TestRequestFallbackObjects(t *testing.T) {
	up := newRecording(t, 0)
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: gpt-3.5-turbo
    litellm_params: {model: openai/gpt-3.5-turbo, api_key: k, api_base: %[1]s}
  - model_name: gpt-6-luna
    litellm_params: {model: openai/gpt-6-luna, api_key: k, api_base: %[1]s}
router_settings: {num_retries: 0}
general_settings: {master_key: sk-master}
`, up.srv.URL), nil)
	custom := `[{"role":"user","content":"Describe the weather in a coastal city during winter."}]`
	body := `{"model":"gpt-3.5-turbo","messages":[{"role":"user","content":"Who was Alexander?"}],"max_tokens":32,` +
		`"mock_testing_fallbacks":true,"fallbacks":[{"model":"gpt-6-luna","messages":` + custom + `}]}`
	resp := f.post(t, "/v1/chat/completions", "sk-master", body)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("X-Litellm-Model-Group") != "gpt-6-luna" {
		t.Fatalf("status %d group %q: %s", resp.StatusCode, resp.Header.Get("X-Litellm-Model-Group"), out)
	}
	sent := up.bodies.Last(t, "the upstream")
	if m := gjson.Get(sent, "messages").Raw; m != custom || gjson.Get(sent, "model").Str != "gpt-6-luna" ||
		gjson.Get(sent, "max_tokens").Int() != 32 || strings.Contains(sent, "fallbacks") {
		t.Errorf("the fallback's call = %s; want the custom messages, its model, max_tokens kept, no fallbacks", sent)
	}

	// The configured form: the entry for the requested model applies.
	resp = f.post(t, "/v1/chat/completions", "sk-master", `{"model":"gpt-3.5-turbo","messages":[],"mock_testing_fallbacks":true,"fallbacks":[{"gpt-3.5-turbo":["gpt-6-luna"]}]}`)
	out = gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("X-Litellm-Model-Group") != "gpt-6-luna" || resp.Header.Get("X-Litellm-Attempted-Fallbacks") != "1" {
		t.Errorf("{group: [fallbacks]} form: status %d group %q: %s", resp.StatusCode, resp.Header.Get("X-Litellm-Model-Group"), out)
	}

}

// A model no group serves is a 404 whose list names only the models the
// key may use, never the rest of the config's (issue 31); the master key
// sees them all.
func TestUnknownModelListsKeysModels(t *testing.T) {
	up := gatewaytest.Answering(t, 200, "application/json", completion)
	f := keyedFixture(t, fmt.Sprintf(`model_list:
  - model_name: public
    litellm_params: {model: openai/gpt-4o, api_base: %[1]q, api_key: k}
  - model_name: secret-finance
    litellm_params: {model: openai/gpt-4o, api_base: %[1]q, api_key: k}
general_settings: {master_key: sk-master}
`, up.URL+"/v1"), keys.Key{Hash: keys.HashSecret("sk-public"), Settings: keys.Settings{Models: []string{"public"}}})
	resp := f.post(t, "/v1/chat/completions", "sk-public", `{"model":"nowhere","messages":[]}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 404 || !strings.Contains(out, `available models: public`) || strings.Contains(out, "secret-finance") {
		t.Errorf("restricted key: status %d: %s", resp.StatusCode, out)
	}
	resp = f.post(t, "/v1/chat/completions", "sk-master", `{"model":"nowhere","messages":[]}`)
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 404 || !strings.Contains(out, "secret-finance") {
		t.Errorf("master key: status %d: %s", resp.StatusCode, out)
	}
}

// LiteLLM's text-completion-openai/ provider: a text completion passes
// through to the deployment's OpenAI-compatible /v1/completions, priced
// from the table as the model it names; a chat request is sent, as LiteLLM
// sends it, as a text completion (the messages' texts as the prompt) and
// answered as a chat completion, whole or streamed (issue 31).
func TestTextCompletionOpenAI(t *testing.T) {
	s, url := recordingUpstream(t, "application/json", textCompletion)
	f := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: instruct
    litellm_params: {model: text-completion-openai/gpt-3.5-turbo-instruct, api_base: %s/v1, api_key: sk-up}
`, url), nil)
	resp := f.post(t, "/v1/completions", "", `{"model":"instruct","prompt":"say hi","max_tokens":5}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 200 || out != textCompletion || s.path != "/v1/completions" || s.model != "gpt-3.5-turbo-instruct" {
		t.Fatalf("status %d, upstream %s model %q: %s", resp.StatusCode, s.path, s.model, out)
	}
	if c := f.completion(t, resp); !c.CostKnown || c.CostNanos == 0 {
		t.Errorf("cost %d known %v: want the table's gpt-3.5-turbo-instruct price", c.CostNanos, c.CostKnown)
	}
	s.path = ""
	resp = f.post(t, "/v1/chat/completions", "", `{"model":"instruct","messages":[{"role":"user","content":[{"type":"text","text":"say hi"}]}],"max_completion_tokens":5,"tools":[]}`)
	out = gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 200 || s.path != "/v1/completions" {
		t.Fatalf("chat: status %d, upstream %q: %s", resp.StatusCode, s.path, out)
	}
	sent := gjson.ParseBytes(s.body)
	if sent.Get("prompt").Str != "say hi" || sent.Get("max_tokens").Int() != 5 || sent.Get("messages").Exists() || sent.Get("tools").Exists() {
		t.Errorf("sent %s; want the prompt, max_tokens, no messages or tools", s.body)
	}
	if gjson.Get(out, "object").Str != "chat.completion" || gjson.Get(out, "choices.0.message.content").Str != "hi there" ||
		gjson.Get(out, "choices.0.message.role").Str != "assistant" || gjson.Get(out, "usage.total_tokens").Int() != 7 {
		t.Errorf("chat answer = %s", out)
	}
	if c := f.completion(t, resp); c.Usage.TotalTokens != 7 || !c.CostKnown {
		t.Errorf("chat usage %+v known %v", c.Usage, c.CostKnown)
	}
}

// A streamed chat request to a text-completion-openai deployment reads the
// completion's events as chat chunks, as they arrive.
func TestTextCompletionOpenAIStream(t *testing.T) {
	s, url := recordingUpstream(t, "text/event-stream", completionEvents)
	f := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: instruct
    litellm_params: {model: text-completion-openai/gpt-3.5-turbo-instruct, api_base: %s}
`, url), nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"instruct","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"stream":true}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 200 || s.path != "/completions" || !strings.Contains(out, `"object":"chat.completion.chunk"`) ||
		!strings.Contains(out, `"delta":{"content":"hi"}`) || !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Fatalf("status %d, upstream %q: %s", resp.StatusCode, s.path, out)
	}
	if p := gjson.GetBytes(s.body, "prompt"); !p.IsArray() || len(p.Array()) != 2 {
		t.Errorf("prompt = %s; want the two messages' texts", p.Raw)
	}
	if c := f.completion(t, resp); c.Usage.TotalTokens != 4 {
		t.Errorf("usage %+v", c.Usage)
	}
}

// A moderation request whose model no group serves, or that names none,
// goes to OpenAI's /moderations with OPENAI_API_KEY, as LiteLLM's docs say
// ("no need to specify model in the request or on the config"); a model a
// group serves is routed as before (issue 31).
func TestModerationWithoutDeployment(t *testing.T) {
	s, url := recordingUpstream(t, "application/json", `{"id":"modr-1","model":"omni-moderation-latest","results":[{"flagged":false}]}`)
	f := newFixture(t, `model_list:
  - model_name: gpt-4o
    litellm_params: {model: openai/gpt-4o, api_key: k, api_base: "http://127.0.0.1:9"}
`, map[string]string{"OPENAI_API_KEY": "sk-openai", "OPENAI_API_BASE": url + "/v1"})
	for _, body := range []string{`{"input":"hello"}`, `{"input":"hello","model":"text-moderation-stable"}`} {
		s.path, s.model = "", ""
		resp := f.post(t, "/v1/moderations", "", body)
		out := gatewaytest.ReadAll(t, resp.Body)
		if resp.StatusCode != 200 || s.path != "/v1/moderations" || !strings.Contains(out, "modr-1") {
			t.Errorf("%s: status %d, upstream %q: %s", body, resp.StatusCode, s.path, out)
		}
		if want := gjson.Get(body, "model").Str; s.model != want {
			t.Errorf("%s: upstream model %q, want %q", body, s.model, want)
		}
	}
	// Without OPENAI_API_KEY there is no default: an unknown model is a 404.
	f = newFixture(t, "model_list:\n  - model_name: gpt-4o\n    litellm_params: {model: openai/gpt-4o, api_key: k}\n", nil)
	resp := f.post(t, "/v1/moderations", "", `{"input":"hello","model":"text-moderation-stable"}`)
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 404 {
		t.Errorf("no OPENAI_API_KEY: status %d: %s", resp.StatusCode, out)
	}
}
