package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
)

// The streaming boundary of the Messages API is the chat one: an error
// before content falls back with nothing sent; a failure after content
// ends the stream with Anthropic's error event, and what was received is
// billed.
func TestMessagesStreamBoundary(t *testing.T) {
	f := newMessagesFixture(t, `  - model_name: flaky
    litellm_params: {model: anthropic/errfirst, api_base: CLAUDE_URL, api_key: sk-ant-fake}
  - model_name: cut
    litellm_params: {model: anthropic/cutafter, api_base: CLAUDE_URL, api_key: sk-ant-fake}`)
	post := func(body string) (*http.Response, string) {
		resp := f.send(t, http.MethodPost, "/v1/messages", strings.NewReader(body), "X-Api-Key", "sk-master")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}

	resp, out := post(`{"model":"flaky","max_tokens":10,"stream":true,"num_retries":0,"fallbacks":["claude-alias"],"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(out, `"text":"Hello "`) || strings.Contains(out, "event: error") {
		t.Errorf("fallback after an error event: %d %s", resp.StatusCode, out)
	}
	c := f.completion(t)
	if c.Fallbacks != 1 || c.Err != nil || c.Attempt.Group != "claude-alias" {
		t.Errorf("completion: fallbacks %d err %v", c.Fallbacks, c.Err)
	}
	if got := f.claude.last(t).body; gjson.Get(got, "fallbacks").Exists() || gjson.Get(got, "num_retries").Exists() || gjson.Get(got, "model").Str != claudeModel {
		t.Errorf("the gateway's own fields reached Anthropic: %s", got)
	}

	resp, out = post(`{"model":"cut","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(out, `"text":"Hello "`) {
		t.Fatalf("cut stream: %d %s", resp.StatusCode, out)
	}
	last := out[strings.LastIndex(strings.TrimSpace(out), "event: "):]
	if !strings.HasPrefix(last, "event: error\ndata: ") || gjson.Get(strings.TrimPrefix(strings.TrimSpace(last), "event: error\ndata: "), "error.type").Str != "api_error" {
		t.Errorf("cut stream ends with %q, want an Anthropic error event", last)
	}
	c = f.completion(t)
	if apierr.KindOf(c.Err) != apierr.StreamBroken || c.Usage.PromptTokens != 32 || c.Usage.CompletionTokens < 1 {
		t.Errorf("cut stream completion: err %v usage %+v", c.Err, c.Usage)
	}
}

// Anthropic's routes answer even a wrong method or a bad body in
// Anthropic's error shape.
func TestMessagesRequestErrors(t *testing.T) {
	f := newMessagesFixture(t, "")
	for _, tt := range []struct {
		name, method, body string
		status             int
		typ                string
	}{
		{"GET", http.MethodGet, "", 405, "invalid_request_error"},
		{"not JSON", http.MethodPost, "{", 400, "invalid_request_error"},
		{"no model", http.MethodPost, `{"max_tokens":1,"messages":[]}`, 400, "invalid_request_error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
				req := gatewaytest.Request(tt.method, f.srv.URL+path, "sk-master", tt.body)
				req.RequestURI = ""
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				out := gatewaytest.ReadAll(t, resp.Body)
				if resp.StatusCode != tt.status || gjson.Get(out, "type").Str != "error" || gjson.Get(out, "error.type").Str != tt.typ {
					t.Errorf("%s: %d %s", path, resp.StatusCode, out)
				}
			}
		})
	}
}
