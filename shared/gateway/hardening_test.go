package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

const mockYAML = `model_list:
  - model_name: gpt-4o-mini
    litellm_params: {model: mock/gpt-4o-mini}
general_settings: {master_key: sk-master}
`

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
			out := readAll(t, resp.Body)
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

// upstreamCounter is an OpenAI or Anthropic upstream that answers a fixed
// body and counts its calls.
type upstreamCounter struct {
	srv   *httptest.Server
	calls atomic.Int32
}

func newUpstreamCounter(t *testing.T, status int, contentType, body string) *upstreamCounter {
	u := &upstreamCounter{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// keyedFixture is a gateway with a master key and the given virtual keys.
func keyedFixture(t *testing.T, yaml string, ks ...keys.Key) *fixture {
	t.Helper()
	return completionFixture(t, yaml, nil, ks...)
}

// completionFixture is keyedFixture with an OnComplete hook.
func completionFixture(t *testing.T, yaml string, onComplete func(context.Context, *Completion), ks ...keys.Key) *fixture {
	t.Helper()
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	store := keys.NewMemory()
	for _, k := range ks {
		if err := store.CreateKey(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: log,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	srv := httptest.NewServer(New(Options{Config: cfg, Router: rt, Provider: providers.New(providers.NewHTTPClient()), Keys: store, Logger: log, OnComplete: onComplete}))
	t.Cleanup(srv.Close)
	return &fixture{srv: srv}
}

// TestDuplicateModelKey: the gateway routed and checked the last "model"
// while the Anthropic translator sent the first, so a key allowed only a
// cheap model could call any. A repeated top-level key is now a 400 naming
// it, before any upstream call.
func TestDuplicateModelKey(t *testing.T) {
	up := newUpstreamCounter(t, 200, "application/json", `{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-20250514","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	f := keyedFixture(t, fmt.Sprintf(`model_list:
  - model_name: claude-cheap
    litellm_params: {model: "anthropic/*", api_base: %q, api_key: sk-ant}
general_settings: {master_key: sk-master}
`, up.srv.URL), keys.Key{Hash: keys.HashSecret("sk-cheap"), Settings: keys.Settings{Models: []string{"claude-cheap"}}})
	resp := f.post(t, "/v1/chat/completions", "sk-cheap", `{"model":"claude-opus-4-20250514","model":"claude-cheap","messages":[{"role":"user","content":"hi"}]}`)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400: %s", resp.StatusCode, out)
	}
	if msg, typ, _ := openAIError(t, out); typ != "invalid_request_error" || !strings.Contains(msg, `duplicate key "model"`) {
		t.Fatalf("error %s: %s", typ, msg)
	}
	if n := up.calls.Load(); n != 0 {
		t.Fatalf("upstream called %d times", n)
	}
}

// TestFallbacksAccess: per-request fallbacks name models the key must be
// allowed, as in LiteLLM; a key allowed only "limited" cannot reach "ok"
// through them. The refusal comes before any upstream call.
func TestFallbacksAccess(t *testing.T) {
	limited := newUpstreamCounter(t, 500, "application/json", `{"error":{"message":"down","type":"server_error"}}`)
	ok := newUpstreamCounter(t, 200, "application/json", completion)
	f := keyedFixture(t, fmt.Sprintf(`model_list:
  - model_name: limited
    litellm_params: {model: openai/gpt-4o-mini, api_base: %q, api_key: sk-up}
  - model_name: ok
    litellm_params: {model: openai/gpt-4o, api_base: %q, api_key: sk-up}
router_settings: {model_group_alias: {alias-ok: ok}}
general_settings: {master_key: sk-master}
`, limited.srv.URL+"/v1", ok.srv.URL+"/v1"),
		keys.Key{Hash: keys.HashSecret("sk-limited"), Settings: keys.Settings{Models: []string{"limited"}}},
		keys.Key{Hash: keys.HashSecret("sk-both"), Settings: keys.Settings{Models: []string{"limited", "ok"}}})
	for _, tt := range []struct {
		name, key, fallbacks string
		status               int
	}{
		{"string", "sk-limited", `["ok"]`, 403},
		{"object", "sk-limited", `[{"model":"ok"}]`, 403},
		{"alias", "sk-limited", `["alias-ok"]`, 403},
		{"after an allowed one", "sk-limited", `["limited","ok"]`, 403},
		{"unknown model", "sk-limited", `["nowhere"]`, 403},
		{"allowed", "sk-both", `["ok"]`, 200},
		{"allowed through its alias", "sk-both", `["alias-ok"]`, 200},
		{"master key", "sk-master", `["ok"]`, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := limited.calls.Load() + ok.calls.Load()
			resp := f.post(t, "/v1/chat/completions", tt.key, `{"model":"limited","messages":[{"role":"user","content":"hi"}],"fallbacks":`+tt.fallbacks+`}`)
			out := readAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, out)
			}
			if tt.status != 403 {
				return
			}
			if _, _, code := openAIError(t, out); code != "model_not_allowed" {
				t.Fatalf("code %s, want model_not_allowed: %s", code, out)
			}
			if n := limited.calls.Load() + ok.calls.Load() - before; n != 0 {
				t.Fatalf("%d upstream calls before the refusal", n)
			}
		})
	}
}

// TestUpstreamInvalidJSON: a 200 whose body is not JSON (cut short) is the
// provider's failure, a 502 that the router retries or falls back from, and
// is not billed, as LiteLLM raises APIError for it.
func TestUpstreamInvalidJSON(t *testing.T) {
	bad := newUpstreamCounter(t, 200, "application/json", `{"id":"x","choices":[`)
	good := newUpstreamCounter(t, 200, "application/json", completion)
	done := make(chan *Completion, 1)
	f := completionFixture(t, fmt.Sprintf(`model_list:
  - model_name: bad
    litellm_params: {model: openai/gpt-4o-mini, api_base: %q, api_key: sk-up}
  - model_name: good
    litellm_params: {model: openai/gpt-4o, api_base: %q, api_key: sk-up}
router_settings: {num_retries: 1, fallbacks: [{bad: [good]}]}
general_settings: {master_key: sk-master}
`, bad.srv.URL+"/v1", good.srv.URL+"/v1"), func(_ context.Context, c *Completion) { done <- c })

	resp := f.post(t, "/v1/chat/completions", "sk-master", `{"model":"bad","messages":[{"role":"user","content":"hi"}]}`)
	out := readAll(t, resp.Body)
	c := <-done
	if resp.StatusCode != 200 || !strings.Contains(out, `"content":"hi"`) {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	if bad.calls.Load() != 2 || good.calls.Load() != 1 || c.Retries != 1 || c.Fallbacks != 1 {
		t.Fatalf("calls bad %d good %d, retries %d fallbacks %d; want 2, 1, 1, 1", bad.calls.Load(), good.calls.Load(), c.Retries, c.Fallbacks)
	}
	if c.Usage.TotalTokens != 12 || c.UsageEstimated {
		t.Fatalf("usage %+v (estimated %v): the invalid answers were billed", c.Usage, c.UsageEstimated)
	}

	resp = f.post(t, "/v1/chat/completions", "sk-master", `{"model":"bad","messages":[{"role":"user","content":"hi"}],"disable_fallbacks":true}`)
	out = readAll(t, resp.Body)
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

// TestBearerHeaders: the key is read as LiteLLM reads it (and as the admin
// API does): x-litellm-api-key first, then Authorization, api-key,
// x-api-key.
func TestBearerHeaders(t *testing.T) {
	for _, tt := range []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"x-litellm-api-key", map[string]string{"X-Litellm-Api-Key": "sk-1"}, "sk-1"},
		{"x-litellm-api-key with Bearer", map[string]string{"X-Litellm-Api-Key": "Bearer sk-1"}, "sk-1"},
		{"x-litellm-api-key first", map[string]string{"X-Litellm-Api-Key": "sk-1", "Authorization": "Bearer sk-2"}, "sk-1"},
		{"blank x-litellm-api-key", map[string]string{"X-Litellm-Api-Key": " ", "Authorization": "Bearer sk-2"}, "sk-2"},
		{"authorization", map[string]string{"Authorization": "bearer sk-2", "Api-Key": "sk-3"}, "sk-2"},
		{"api-key", map[string]string{"Api-Key": "sk-3", "X-Api-Key": "sk-4"}, "sk-3"},
		{"x-api-key", map[string]string{"X-Api-Key": "sk-4"}, "sk-4"},
		{"none", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			if got := Bearer(r); got != tt.want {
				t.Fatalf("Bearer = %q, want %q", got, tt.want)
			}
		})
	}

	f := keyedFixture(t, mockYAML)
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("X-Litellm-Api-Key", "sk-master")
	req.Header.Set("Authorization", "Bearer sk-wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out := readAll(t, resp.Body); resp.StatusCode != 200 {
		t.Fatalf("status %d with the master key in x-litellm-api-key: %s", resp.StatusCode, out)
	}
}

// TestUpstreamHeadersOnStreams: the provider's request id and rate-limit
// headers reach the client as llm_provider-* on streams too, as on unary
// responses.
func TestUpstreamHeadersOnStreams(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req_123")
		w.Header().Set("X-Ratelimit-Remaining-Requests", "99")
		w.Header().Set("Openai-Processing-Ms", "7")
		w.Header().Set("X-Other", "not copied")
		if strings.Contains(readAll(t, r.Body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, roleChunk+chunk("hi")+"data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, completion)
	}))
	t.Cleanup(up.Close)
	f := keyedFixture(t, fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/gpt-4o, api_base: %q, api_key: sk-up}
general_settings: {master_key: sk-master}
`, up.URL+"/v1"))
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			resp := f.post(t, "/v1/chat/completions", "sk-master", fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":%v}`, stream))
			out := readAll(t, resp.Body)
			if resp.StatusCode != 200 || !strings.Contains(out, "hi") {
				t.Fatalf("status %d: %s", resp.StatusCode, out)
			}
			h := resp.Header
			if h.Get("Llm_provider-X-Request-Id") != "req_123" || h.Get("Llm_provider-X-Ratelimit-Remaining-Requests") != "99" ||
				h.Get("Llm_provider-Openai-Processing-Ms") != "7" || h.Get("Llm_provider-X-Other") != "" {
				t.Fatalf("headers %v", h)
			}
		})
	}
}
