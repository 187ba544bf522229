package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// fixture is a gateway in front of fake upstreams.
type fixture struct {
	srv  *httptest.Server
	logs *gatewaytest.Logs
}

func newFixture(t *testing.T, yaml string, env map[string]string) *fixture {
	t.Helper()
	cfg, err := config.Load([]byte(yaml), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	logs := &gatewaytest.Logs{}
	f := serve(t, testHandler(Options{Config: cfg, Logger: logs.Logger(), MaxBody: 1 << 20}))
	f.logs = logs
	return f
}

// testHandler is New(o) with test collaborators where o leaves them unset:
// a router over o.Config that skips backoff waits, the real provider
// dispatcher, and discarded logs.
func testHandler(o Options) *Handler {
	if o.Logger == nil {
		o.Logger = gatewaytest.Quiet()
	}
	if o.Router == nil {
		o.Router = router.New(o.Config, router.Options{Logger: o.Logger, Sleep: noWait})
	}
	if o.Provider == nil {
		o.Provider = providers.New(providers.NewHTTPClient())
	}
	return New(o)
}

func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// loadConfig parses a LiteLLM config.
func loadConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// serve serves h over HTTP until the test ends.
func serve(t *testing.T, h http.Handler) *fixture {
	return &fixture{srv: gatewaytest.Upstream(t, h.ServeHTTP)}
}

func (f *fixture) post(t *testing.T, path, key, body string) *http.Response {
	t.Helper()
	return f.send(t, http.MethodPost, path, strings.NewReader(body), append(bearer(key), "Content-Type", "application/json")...)
}

// postWant posts body to path with key and fails the test unless the
// answer has status; it returns the answer and its body, read.
func (f *fixture) postWant(t *testing.T, path, key, body string, status int) (*http.Response, string) {
	t.Helper()
	resp := f.post(t, path, key, body)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, out)
	}
	return resp, out
}

// send sends a request to the gateway with header fields (name, value
// pairs); its body is closed when the test ends.
func (f *fixture) send(t *testing.T, method, path string, body io.Reader, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// bearer is the header fields of key ("": none).
func bearer(key string) []string {
	if key == "" {
		return nil
	}
	return []string{"Authorization", "Bearer " + key}
}

// openAIError decodes an OpenAI-style error body and checks its shape.
func openAIError(t *testing.T, body string) (msg, typ, code string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    string  `json:"code"`
		} `json:"error"`
	}
	gatewaytest.Decode(t, strings.NewReader(body), &e)
	if e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an OpenAI error body: %q", body)
	}
	return e.Error.Message, e.Error.Type, e.Error.Code
}

const completion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-2024","system_fingerprint":"fp_x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":{"content":[]},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12},"vendor_extra":{"a":1}}`

// downAndUp are two upstreams: down fails every request with a 500, up
// answers completion.
func downAndUp(t *testing.T) (down, up *gatewaytest.Counter) {
	return gatewaytest.Answering(t, 500, "application/json", `{"error":{"message":"down","type":"server_error"}}`),
		gatewaytest.Answering(t, 200, "application/json", completion)
}

const mockYAML = `model_list:
  - model_name: gpt-4o-mini
    litellm_params: {model: mock/gpt-4o-mini}
general_settings: {master_key: sk-master}
`

// keyedFixture is a gateway with a master key and the given virtual keys.
func keyedFixture(t *testing.T, yaml string, ks ...keys.Key) *fixture {
	t.Helper()
	return completionFixture(t, yaml, nil, ks...)
}

// completionFixture is keyedFixture with an OnComplete hook.
func completionFixture(t *testing.T, yaml string, onComplete func(context.Context, *Completion), ks ...keys.Key) *fixture {
	t.Helper()
	store := keys.NewMemory()
	for _, k := range ks {
		if err := store.CreateKey(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	return serve(t, testHandler(Options{Config: loadConfig(t, yaml), Keys: store, OnComplete: onComplete}))
}

func TestHealthAndModels(t *testing.T) {
	f := newFixture(t, `model_list:
  - model_name: b
    litellm_params: {model: mock/b}
  - model_name: a
    litellm_params: {model: mock/a}
  - model_name: hidden-provider
    litellm_params: {model: vertex_ai/x}
router_settings: {model_group_alias: {alias-a: a, secret: {model: b, hidden: true}}}
`, nil)
	for _, p := range []string{"/health/liveliness", "/health/readiness"} {
		resp, err := http.Get(f.srv.URL + p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, resp, err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get(f.srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object string
		} `json:"data"`
	}
	gatewaytest.Decode(t, resp.Body, &list)
	resp.Body.Close()
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if list.Object != "list" || strings.Join(ids, ",") != "a,alias-a,b" {
		t.Fatalf("models = %v (%s)", ids, list.Object)
	}
}

type panicProvider struct{ afterFirstChunk bool }

type panicReader struct{ sent bool }

func (p *panicReader) Read(b []byte) (int, error) {
	if !p.sent {
		p.sent = true
		return copy(b, chunk("hi")), nil
	}
	panic("reader exploded")
}

func (p panicProvider) Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	if !p.afterFirstChunk {
		panic("provider exploded")
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(&panicReader{})}, nil
}

// A panic never reaches the client as a stack trace: a 500 before output, an
// SSE error event after a stream started.
func TestPanicsBecomeCleanErrors(t *testing.T) {
	cfg := loadConfig(t, "model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: http://127.0.0.1:1}\n")
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after first chunk=%v", after), func(t *testing.T) {
			logs := &gatewaytest.Logs{}
			rt := router.New(cfg, router.Options{Logger: gatewaytest.Quiet()})
			resp := serve(t, testHandler(Options{Config: cfg, Router: rt, Provider: panicProvider{afterFirstChunk: after},
				Logger: logs.Logger()})).post(t, "/v1/chat/completions", "", `{"model":"m","stream":true}`)
			out := gatewaytest.ReadAll(t, resp.Body)
			if !after {
				if resp.StatusCode != 500 {
					t.Fatalf("status %d: %s", resp.StatusCode, out)
				}
				openAIError(t, out)
			} else if !strings.HasPrefix(out, chunk("hi")) || !strings.Contains(out, `data: {"error":`) {
				t.Fatalf("stream = %q", out)
			}
			if strings.Contains(out, "goroutine") || strings.Contains(out, "exploded") {
				t.Fatalf("panic details reached the client: %q", out)
			}
			if !strings.Contains(logs.String(), "exploded") || strings.Contains(logs.String(), "goroutine ") {
				t.Fatalf("want one log line with the panic value and no stack: %s", logs.String())
			}
		})
	}
}

func TestRequestErrors(t *testing.T) {
	f := newFixture(t, `model_list:
  - model_name: m
    litellm_params: {model: mock/m}
  - model_name: claude
    litellm_params: {model: cohere/command-r}
general_settings: {master_key: sk-master}
`, nil)
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 1<<20) + `"}]}`
	tests := []struct {
		name, method, path, key, body string
		status                        int
		code, msgHas                  string
	}{
		{"no key", "POST", "/v1/chat/completions", "", `{"model":"m"}`, 401, "invalid_api_key", "Authentication Error, No api key passed in."},
		{"wrong key", "POST", "/v1/chat/completions", "sk-wrong", `{"model":"m"}`, 401, "invalid_api_key", "Authentication Error, Invalid proxy server token passed."},
		{"models needs key", "GET", "/v1/models", "", "", 401, "invalid_api_key", ""},
		{"malformed json", "POST", "/v1/chat/completions", "sk-master", `{"model":`, 400, "invalid_request", "not valid JSON"},
		{"not an object", "POST", "/v1/chat/completions", "sk-master", `[1,2]`, 400, "invalid_request", "JSON object"},
		{"missing model", "POST", "/v1/chat/completions", "sk-master", `{"messages":[]}`, 400, "invalid_request", "'model'"},
		{"unknown model", "POST", "/v1/chat/completions", "sk-master", `{"model":"gpt-5-ultra"}`, 404, "model_not_found", `"gpt-5-ultra" not found; available models: m`},
		{"unimplemented provider", "POST", "/v1/chat/completions", "sk-master", `{"model":"claude"}`, 501, "not_implemented", `provider "cohere" is not implemented yet`},
		{"too large", "POST", "/v1/chat/completions", "sk-master", big, 413, "request_too_large", "limit"},
		{"unknown route", "POST", "/v1/completions/x", "sk-master", `{}`, 404, "not_found", "no route"},
		{"wrong method", "GET", "/v1/chat/completions", "sk-master", "", 405, "method_not_allowed", "use POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.send(t, tt.method, tt.path, strings.NewReader(tt.body), bearer(tt.key)...)
			out := gatewaytest.ReadAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.status, out)
			}
			msg, _, code := openAIError(t, out)
			if code != tt.code || !strings.Contains(msg, tt.msgHas) {
				t.Errorf("error = %s / %q; want code %s and message containing %q", code, msg, tt.code, tt.msgHas)
			}
		})
	}
}

// TestDeepBody: a body nested deeper than wire.MaxDepth is a 400 (not a
// crash of the process); one at the bound is served.
func TestDeepBody(t *testing.T) {
	f := newFixture(t, mockYAML, nil)
	for _, tt := range []struct {
		name   string
		body   string
		status int
	}{
		{"unbalanced, under the body limit", `{"model":"gpt-4o-mini","x":` + strings.Repeat("[", 1<<20-100), 400},
		{"balanced, one level over", `{"model":"gpt-4o-mini","x":` + strings.Repeat("[", wire.MaxDepth) + strings.Repeat("]", wire.MaxDepth) + `}`, 400},
		{"at the bound", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"x":` + strings.Repeat("[", wire.MaxDepth-1) + strings.Repeat("]", wire.MaxDepth-1) + `}`, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.post(t, "/v1/chat/completions", "sk-master", tt.body)
			out := gatewaytest.ReadAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tt.status, out)
			}
			if tt.status == 400 {
				if msg, typ, _ := openAIError(t, out); typ != "invalid_request_error" || !strings.Contains(msg, "deeper than") {
					t.Fatalf("error %s: %s", typ, msg)
				}
			}
		})
	}
}

// TestDuplicateModelKey: the gateway routed and checked the last "model"
// while the Anthropic translator sent the first, so a key allowed only a
// cheap model could call any. A repeated top-level key is now a 400 naming
// it, before any upstream call.
func TestDuplicateModelKey(t *testing.T) {
	up := gatewaytest.Answering(t, 200, "application/json", `{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-20250514","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	f := keyedFixture(t, fmt.Sprintf(`model_list:
  - model_name: claude-cheap
    litellm_params: {model: "anthropic/*", api_base: %q, api_key: sk-ant}
general_settings: {master_key: sk-master}
`, up.URL), keys.Key{Hash: keys.HashSecret("sk-cheap"), Settings: keys.Settings{Models: []string{"claude-cheap"}}})
	resp := f.post(t, "/v1/chat/completions", "sk-cheap", `{"model":"claude-opus-4-20250514","model":"claude-cheap","messages":[{"role":"user","content":"hi"}]}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400: %s", resp.StatusCode, out)
	}
	if msg, typ, _ := openAIError(t, out); typ != "invalid_request_error" || !strings.Contains(msg, `duplicate key "model"`) {
		t.Fatalf("error %s: %s", typ, msg)
	}
	if n := up.Calls.Load(); n != 0 {
		t.Fatalf("upstream called %d times", n)
	}
}

func TestMockErrorsAndEmbeddings(t *testing.T) {
	f := newFixture(t, `model_list:
  - model_name: flaky
    litellm_params: {model: mock/x, mock_response: litellm.RateLimitError}
  - model_name: emb
    litellm_params: {model: mock/text-embedding-3-small}
router_settings: {num_retries: 0, cooldown_time: 30}
`, nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"flaky","messages":[]}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 429 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	// The 429 cooled the only deployment: the next request is refused with
	// the cooldown's end as Retry-After, without calling the provider.
	resp = f.post(t, "/v1/chat/completions", "", `{"model":"flaky","messages":[]}`)
	out = gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), out)
	}
	if _, _, code := openAIError(t, out); code != "no_deployments_available" {
		t.Errorf("code = %s", code)
	}

	resp = f.post(t, "/v1/embeddings", "", `{"model":"emb","input":["a","b"],"dimensions":4}`)
	var e struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
			Index     int       `json:"index"`
		} `json:"data"`
	}
	if resp.StatusCode != 200 {
		t.Fatalf("embeddings: %d", resp.StatusCode)
	}
	gatewaytest.Decode(t, resp.Body, &e)
	if len(e.Data) != 2 || len(e.Data[0].Embedding) != 4 || e.Data[1].Index != 1 {
		t.Fatalf("embeddings = %+v", e.Data)
	}
}

// bodyRecorder is an upstream answering answer and keeping the bodies it got.
type bodyRecorder struct {
	srv    *httptest.Server
	bodies providerstest.Log[string]
}

func newBodyRecorder(t *testing.T, answer string) *bodyRecorder {
	u := &bodyRecorder{}
	u.srv = gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.bodies.Add(string(b))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	})
	return u
}

func (u *bodyRecorder) last() string {
	b, _ := u.bodies.Latest()
	return b
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
			f.postWant(t, "/v1/chat/completions", "sk-master", tt.body, tt.status)
		})
	}
	if b := ant.last(); strings.Contains(b, `"n"`) || strings.Contains(b, "drop_params") || b == "" {
		t.Errorf("anthropic got %s, want neither n nor drop_params", b)
	}
	if b := oai.last(); strings.Contains(b, "drop_params") || !strings.Contains(b, `"seed":1`) {
		t.Errorf("openai got %s, want seed and no drop_params", b)
	}
}
