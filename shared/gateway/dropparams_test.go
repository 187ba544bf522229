package gateway

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// bodyRecorder is an upstream answering answer and keeping the bodies it got.
type bodyRecorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newBodyRecorder(t *testing.T, answer string) *bodyRecorder {
	u := &bodyRecorder{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, string(b))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *bodyRecorder) last() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.bodies) == 0 {
		return ""
	}
	return u.bodies[len(u.bodies)-1]
}

// A request's own drop_params reaches the translating provider (Anthropic
// drops what it cannot send instead of refusing it) and never an upstream.
func TestRequestDropParams(t *testing.T) {
	ant := newBodyRecorder(t, `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	oai := newBodyRecorder(t, completion)
	f := keyedFixture(t, fmt.Sprintf(`model_list:
  - model_name: claude
    litellm_params: {model: anthropic/claude-sonnet-4-20250514, api_base: %q, api_key: sk-ant}
  - model_name: gpt
    litellm_params: {model: openai/gpt-4o, api_base: %q, api_key: sk-up}
general_settings: {master_key: sk-master}
`, ant.srv.URL, oai.srv.URL+"/v1"))
	for _, tt := range []struct {
		name, body string
		status     int
	}{
		{"anthropic refuses n without drop_params", `{"model":"claude","n":2,"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"anthropic drops n with drop_params", `{"model":"claude","n":2,"drop_params":true,"messages":[{"role":"user","content":"hi"}]}`, 200},
		{"openai never sees drop_params", `{"model":"gpt","seed":1,"drop_params":true,"messages":[{"role":"user","content":"hi"}]}`, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.post(t, "/v1/chat/completions", "sk-master", tt.body)
			out := readAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, out)
			}
		})
	}
	if b := ant.last(); strings.Contains(b, `"n"`) || strings.Contains(b, "drop_params") || b == "" {
		t.Errorf("anthropic got %s, want neither n nor drop_params", b)
	}
	if b := oai.last(); strings.Contains(b, "drop_params") || !strings.Contains(b, `"seed":1`) {
		t.Errorf("openai got %s, want seed and no drop_params", b)
	}
}
