package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// fixture is a gateway in front of fake upstreams.
type fixture struct {
	srv  *httptest.Server
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func newFixture(t *testing.T, yaml string, env map[string]string) *fixture {
	t.Helper()
	cfg, err := config.Load([]byte(yaml), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt := router.New(cfg, router.Options{
		Cooldowns: cooldown.NewMemory(),
		Logger:    log,
		Sleep:     func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	})
	h := New(Options{Config: cfg, Router: rt, Provider: providers.New(providers.NewHTTPClient()), Logger: log, MaxBody: 1 << 20})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, logs: logs}
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

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
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
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an OpenAI error body: %q (%v)", body, err)
	}
	return e.Error.Message, e.Error.Type, e.Error.Code
}

const completion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-2024","system_fingerprint":"fp_x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":{"content":[]},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12},"vendor_extra":{"a":1}}`

func TestPassThroughOpenAI(t *testing.T) {
	var got map[string]any
	var auth string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			t.Errorf("upstream path = %s", r.URL.Path)
		}
		auth = r.Header.Get("Authorization")
		_ = json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-123")
		io.WriteString(w, completion)
	}))
	defer up.Close()
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: smart
    litellm_params: {model: openai/gpt-4o, api_base: %s/v1, api_key: os.environ/K, temperature: 0.3, input_cost_per_token: 0.001, output_cost_per_token: 0.002}
    model_info: {id: dep-1}
`, up.URL), map[string]string{"K": "sk-upstream-secret"})
	body := `{"model":"smart","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"response_format":{"type":"json_object"},"logprobs":true,"seed":7,"metadata":{"tags":["a"]},"fallbacks":[]}`
	resp := f.post(t, "/v1/chat/completions", "", body)
	out := readAll(t, resp.Body)
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
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, query, apiKey, authz = r.URL.Path, r.URL.RawQuery, r.Header.Get("Api-Key"), r.Header.Get("Authorization")
		io.WriteString(w, completion)
	}))
	defer up.Close()
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: gpt-4o
    litellm_params: {model: azure/my-gpt4o-deployment, api_base: %s/, api_key: az-secret, api_version: "2024-02-01"}
`, up.URL), nil)
	resp := f.post(t, "/chat/completions", "", `{"model":"gpt-4o","messages":[]}`)
	if out := readAll(t, resp.Body); resp.StatusCode != 200 {
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
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer up.Close()
			f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, api_key: sk-upstream-secret}
router_settings: {num_retries: 0}
`, up.URL), nil)
			resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","messages":[]}`)
			out := readAll(t, resp.Body)
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
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices a gone client only after the body is read
		<-r.Context().Done()        // never answers
	}))
	defer up.Close()
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, timeout: 0.05}
router_settings: {num_retries: 0}
`, up.URL), nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","messages":[]}`)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 504 {
		t.Fatalf("status = %d: %s", resp.StatusCode, out)
	}
}

// sseUpstream streams the given events; before each event after the first it
// waits for a signal on next, so the test controls the pace.
func sseUpstream(t *testing.T, events []string, next <-chan struct{}, cut bool, gotBody *[]byte) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if gotBody != nil {
			*gotBody = b
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i, ev := range events {
			if i > 0 && next != nil {
				select {
				case <-next:
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
		if cut { // break the connection mid-stream
			hj, ok := w.(http.Hijacker)
			if !ok {
				t.Error("cannot hijack")
				return
			}
			conn, _, _ := hj.Hijack()
			conn.Close()
		}
	}))
}

func chunk(content string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}]}` + "\n\n"
}

const roleChunk = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"

// The first event reaches the client before the upstream sends the second:
// nothing buffers the stream.
func TestStreamNotBuffered(t *testing.T) {
	next := make(chan struct{})
	var upBody []byte
	up := sseUpstream(t, []string{roleChunk + chunk("Hel"), chunk("lo"), "data: [DONE]\n\n"}, next, false, &upBody)
	defer up.Close()
	f := newFixture(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s}\n", up.URL), nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","stream":true,"messages":[]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(resp.Body)
	readEvent := func() string {
		var b strings.Builder
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("read event: %v (so far %q)", err, b.String())
			}
			b.WriteString(line)
			if line == "\n" {
				return b.String()
			}
		}
	}
	if ev := readEvent(); ev != roleChunk {
		t.Fatalf("first event = %q", ev)
	}
	if ev := readEvent(); ev != chunk("Hel") {
		t.Fatalf("second event = %q", ev)
	}
	next <- struct{}{} // only now does the upstream send "lo"
	if ev := readEvent(); ev != chunk("lo") {
		t.Fatalf("third event = %q", ev)
	}
	next <- struct{}{}
	if ev := readEvent(); ev != "data: [DONE]\n\n" {
		t.Fatalf("last event = %q", ev)
	}
	if !bytes.Contains(upBody, []byte(`"include_usage":true`)) {
		t.Errorf("usage not requested from upstream: %s", upBody)
	}
}

func TestStreamUsageChunk(t *testing.T) {
	usage := `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}` + "\n\n"
	events := []string{chunk("a"), usage, "data: [DONE]\n\n"}
	for _, asked := range []bool{false, true} {
		t.Run(fmt.Sprintf("include_usage=%v", asked), func(t *testing.T) {
			up := sseUpstream(t, events, nil, false, nil)
			defer up.Close()
			f := newFixture(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s}\n", up.URL), nil)
			body := `{"model":"m","stream":true,"messages":[]}`
			if asked {
				body = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
			}
			out := readAll(t, f.post(t, "/v1/chat/completions", "", body).Body)
			if got := strings.Contains(out, `"usage"`); got != asked {
				t.Errorf("client saw usage chunk = %v, want %v:\n%s", got, asked, out)
			}
		})
	}
}

func TestStreamCutMidway(t *testing.T) {
	up := sseUpstream(t, []string{chunk("partial")}, nil, true, nil)
	defer up.Close()
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s}
  - model_name: other
    litellm_params: {model: mock/other}
router_settings: {fallbacks: [{m: [other]}]}
`, up.URL), nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","stream":true,"messages":[]}`)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := chunk("partial")
	if !strings.HasPrefix(out, want) {
		t.Fatalf("stream = %q", out)
	}
	rest := strings.TrimPrefix(out, want)
	if !strings.HasPrefix(rest, `data: {"error":`) || !strings.HasSuffix(rest, "\n\n") || strings.Count(rest, "data:") != 1 {
		t.Fatalf("after the cut, want exactly one error event, got %q", rest)
	}
	if strings.Contains(out, "mock response") {
		t.Fatalf("fallback output spliced into a started stream: %q", out)
	}
	openAIError(t, strings.TrimSpace(strings.TrimPrefix(rest, "data: ")))
}

// A client that goes away cancels the upstream request.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	cancelled := make(chan struct{})
	next := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk("a"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-next:
		}
	}))
	defer up.Close()
	defer close(next)
	f := newFixture(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s}\n", up.URL), nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if !strings.HasPrefix(line, "data:") {
		t.Fatalf("first line %q", line)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second): // a bound on a hang, not a timing assertion
		t.Fatal("upstream request was not cancelled after the client went away")
	}
}

func TestRequestErrors(t *testing.T) {
	f := newFixture(t, `model_list:
  - model_name: m
    litellm_params: {model: mock/m}
  - model_name: claude
    litellm_params: {model: vertex_ai/claude-3-5-sonnet}
general_settings: {master_key: sk-master}
`, nil)
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 1<<20) + `"}]}`
	tests := []struct {
		name, method, path, key, body string
		status                        int
		code, msgHas                  string
	}{
		{"no key", "POST", "/v1/chat/completions", "", `{"model":"m"}`, 401, "invalid_api_key", "missing API key"},
		{"wrong key", "POST", "/v1/chat/completions", "sk-wrong", `{"model":"m"}`, 401, "invalid_api_key", "invalid API key"},
		{"models needs key", "GET", "/v1/models", "", "", 401, "invalid_api_key", ""},
		{"malformed json", "POST", "/v1/chat/completions", "sk-master", `{"model":`, 400, "invalid_request", "not valid JSON"},
		{"not an object", "POST", "/v1/chat/completions", "sk-master", `[1,2]`, 400, "invalid_request", "JSON object"},
		{"missing model", "POST", "/v1/chat/completions", "sk-master", `{"messages":[]}`, 400, "invalid_request", "'model'"},
		{"unknown model", "POST", "/v1/chat/completions", "sk-master", `{"model":"gpt-5-ultra"}`, 404, "model_not_found", `"gpt-5-ultra" not found; available models: m`},
		{"unimplemented provider", "POST", "/v1/chat/completions", "sk-master", `{"model":"claude"}`, 501, "not_implemented", `provider "vertex_ai" is not implemented yet`},
		{"too large", "POST", "/v1/chat/completions", "sk-master", big, 413, "request_too_large", "limit"},
		{"unknown route", "POST", "/v1/completions/x", "sk-master", `{}`, 404, "not_found", "no route"},
		{"wrong method", "GET", "/v1/chat/completions", "sk-master", "", 405, "method_not_allowed", "use POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, f.srv.URL+tt.path, strings.NewReader(tt.body))
			if tt.key != "" {
				req.Header.Set("Authorization", "Bearer "+tt.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out := readAll(t, resp.Body)
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

func TestMockErrorsAndEmbeddings(t *testing.T) {
	f := newFixture(t, `model_list:
  - model_name: flaky
    litellm_params: {model: mock/x, mock_response: litellm.RateLimitError}
  - model_name: emb
    litellm_params: {model: mock/text-embedding-3-small}
router_settings: {num_retries: 0, cooldown_time: 30}
`, nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"flaky","messages":[]}`)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 429 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	// The 429 cooled the only deployment: the next request is refused with
	// the cooldown's end as Retry-After, without calling the provider.
	resp = f.post(t, "/v1/chat/completions", "", `{"model":"flaky","messages":[]}`)
	out = readAll(t, resp.Body)
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
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 200 {
		t.Fatalf("embeddings: %d %v", resp.StatusCode, err)
	}
	if len(e.Data) != 2 || len(e.Data[0].Embedding) != 4 || e.Data[1].Index != 1 {
		t.Fatalf("embeddings = %+v", e.Data)
	}
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
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if list.Object != "list" || strings.Join(ids, ",") != "a,alias-a,b" {
		t.Fatalf("models = %v (%s)", ids, list.Object)
	}
}

// A deployment at its own rpm limit (counted across instances) is not
// waited for: the request is answered 429 at once, with Retry-After.
func TestDeploymentLimitAcrossInstancesNoWait(t *testing.T) {
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		hits.Add(1)
		io.WriteString(w, completion)
	}))
	defer up.Close()
	cfg, err := config.Load([]byte(fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s, rpm: 2}\n", up.URL)), nil)
	if err != nil {
		t.Fatal(err)
	}
	shared := limits.NewMemory()
	var waits []time.Duration
	var mu sync.Mutex
	newInstance := func() *httptest.Server {
		rt := router.New(cfg, router.Options{
			Cooldowns: cooldown.NewMemory(),
			Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
			Sleep: func(ctx context.Context, d time.Duration) error {
				mu.Lock()
				waits = append(waits, d)
				mu.Unlock()
				return ctx.Err()
			},
		})
		// 10 s before the window ends: a Retry-After short enough to wait for.
		at := time.Now().UTC().Truncate(time.Minute).Add(50 * time.Second)
		srv := httptest.NewServer(New(Options{Config: cfg, Router: rt, Provider: providers.New(providers.NewHTTPClient()), Limits: shared,
			Now: func() time.Time { return at }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
		t.Cleanup(srv.Close)
		return srv
	}
	a, b := &fixture{srv: newInstance()}, &fixture{srv: newInstance()}
	for i := 0; i < 2; i++ {
		if resp := a.post(t, "/v1/chat/completions", "", `{"model":"m"}`); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	resp := b.post(t, "/v1/chat/completions", "", `{"model":"m"}`)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third request: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), out)
	}
	if hits.Load() != 2 {
		t.Errorf("upstream hits = %d, want 2", hits.Load())
	}
	if len(waits) != 0 {
		t.Errorf("the router waited %v for a deployment at its rpm limit", waits)
	}
}

// With the limits store unreachable, general_settings.rate_limits_fail_open
// decides: admit uncounted (the default) or refuse with 503. Never a hang.
func TestRateLimitStoreUnreachable(t *testing.T) {
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accept, never answer
		}
	}()
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")}
	awsCfg.BaseEndpoint = aws.String("http://" + hang.Addr().String())
	store := ddblimits.New(ddb.NewClient(awsCfg, ddb.ClientOptions{Emulator: true, MaxAttempts: 1}), "counters",
		ddblimits.Options{Timeout: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, tt := range []struct {
		setting string
		status  int
	}{{"", 200}, {"general_settings: {rate_limits_fail_open: true}\n", 200}, {"general_settings: {rate_limits_fail_open: false}\n", 503}} {
		t.Run(fmt.Sprintf("status %d %q", tt.status, tt.setting), func(t *testing.T) {
			cfg, err := config.Load([]byte("model_list:\n  - model_name: m\n    litellm_params: {model: mock/m, rpm: 100}\n"+tt.setting), nil)
			if err != nil {
				t.Fatal(err)
			}
			rt := router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			srv := httptest.NewServer(New(Options{Config: cfg, Router: rt, Provider: providers.New(providers.NewHTTPClient()), Limits: store,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
			defer srv.Close()
			f := &fixture{srv: srv}
			resp := f.post(t, "/v1/chat/completions", "", `{"model":"m"}`)
			out := readAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, out)
			}
			if tt.status == 503 {
				openAIError(t, out)
			}
		})
	}
}

func TestVirtualKeys(t *testing.T) {
	cfg, err := config.Load([]byte(`model_list:
  - model_name: a
    litellm_params: {model: mock/a}
  - model_name: b
    litellm_params: {model: mock/b}
router_settings: {model_group_alias: {alias-a: a}}
general_settings: {master_key: sk-master}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ks := keys.NewMemory()
	ctx := context.Background()
	spent, budget := 5.0, 5.0
	for _, k := range []keys.Key{
		{Hash: keys.HashSecret("sk-only-a"), Settings: keys.Settings{Models: []string{"a"}, RPMLimit: 2}},
		{Hash: keys.HashSecret("sk-blocked"), Settings: keys.Settings{Blocked: true}},
		{Hash: keys.HashSecret("sk-expired"), ExpiresAt: time.Now().Add(-time.Hour)},
		{Hash: keys.HashSecret("sk-broke"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}},
		{Hash: keys.HashSecret("sk-team"), TeamID: "t1"},
	} {
		if err := ks.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ks.ApplySpend(ctx, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindKey, ID: keys.HashSecret("sk-broke")}, Nanos: keys.Nanos(spent), At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if err := ks.CreateTeam(ctx, keys.Team{ID: "t1", Settings: keys.Settings{Models: []string{"b"}}}); err != nil {
		t.Fatal(err)
	}
	rt := router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(New(Options{Config: cfg, Router: rt, Provider: providers.New(providers.NewHTTPClient()),
		Keys: ks, Limits: limits.NewMemory(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()
	f := &fixture{srv: srv}

	tests := []struct {
		name, key, model string
		status           int
		code             string
	}{
		{"allowed model", "sk-only-a", "a", 200, ""},
		{"allowed through its alias", "sk-only-a", "alias-a", 200, ""},
		{"model not allowed", "sk-only-a", "b", 403, "model_not_allowed"},
		{"over the key's rpm", "sk-only-a", "a", 429, "rate_limit_exceeded"},
		{"unknown key", "sk-nobody", "a", 401, "invalid_api_key"},
		{"blocked key", "sk-blocked", "a", 401, "invalid_api_key"},
		{"expired key", "sk-expired", "a", 401, "invalid_api_key"},
		{"budget spent", "sk-broke", "a", 400, "budget_exceeded"},
		{"team's models", "sk-team", "b", 200, ""},
		{"outside the team's models", "sk-team", "a", 403, "model_not_allowed"},
		{"master key", "sk-master", "b", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.post(t, "/v1/chat/completions", tt.key, `{"model":"`+tt.model+`"}`)
			out := readAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, out)
			}
			if tt.code != "" {
				if _, _, code := openAIError(t, out); code != tt.code {
					t.Fatalf("code %s, want %s", code, tt.code)
				}
			}
			if tt.status == 429 && resp.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		})
	}

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer sk-only-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp.Body)
	resp.Body.Close()
	if !strings.Contains(body, `"id":"a"`) || !strings.Contains(body, `"id":"alias-a"`) || strings.Contains(body, `"id":"b"`) {
		t.Fatalf("models for a key limited to a: %s", body)
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
	cfg, err := config.Load([]byte("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: http://127.0.0.1:1}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after first chunk=%v", after), func(t *testing.T) {
			logs := &syncBuffer{}
			rt := router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			srv := httptest.NewServer(New(Options{Config: cfg, Router: rt, Provider: panicProvider{afterFirstChunk: after},
				Logger: slog.New(slog.NewJSONHandler(logs, nil))}))
			defer srv.Close()
			resp := (&fixture{srv: srv}).post(t, "/v1/chat/completions", "", `{"model":"m","stream":true}`)
			out := readAll(t, resp.Body)
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
