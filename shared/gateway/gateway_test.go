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
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
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
