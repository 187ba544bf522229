package vertex_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
	"github.com/sluice-gw/sluice/shared/providers/vertex"
	"github.com/sluice-gw/sluice/shared/providers/vertex/vertextest"
	"github.com/sluice-gw/sluice/shared/wire"
)

// call is one request the fake Vertex AI received.
type call struct {
	host, path, query string
	header            http.Header
	body              gjson.Result
}

// fakeVertex serves Claude's rawPredict and streamRawPredict as Vertex AI
// does, for the account's tokens only (a 401 in Google's shape otherwise).
// status, when set, is answered with errBody instead.
type fakeVertex struct {
	acct    *vertextest.Account
	also    atomic.Pointer[vertextest.Account] // another account whose tokens are good
	srv     *httptest.Server
	calls   providerstest.Log[call]
	mu      sync.Mutex // guards status and errBody
	status  int
	errBody string
}

func newFakeVertex(t *testing.T, acct *vertextest.Account) *fakeVertex {
	f := &fakeVertex{acct: acct}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeVertex) last(t *testing.T) call {
	t.Helper()
	return f.calls.Last(t, "the fake Vertex AI")
}

func (f *fakeVertex) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	body := gjson.ParseBytes(b)
	f.calls.Add(call{host: r.Host, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body})
	f.mu.Lock()
	status, errBody := f.status, f.errBody
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if a := f.also.Load(); !f.acct.Authorized(r) && (a == nil || !a.Authorized(r)) {
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`)
		return
	}
	if status != 0 {
		w.WriteHeader(status)
		io.WriteString(w, errBody)
		return
	}
	if strings.Contains(r.URL.Path, "/publishers/google/") {
		f.gemini(w, r, body)
		return
	}
	if body.Get("anthropic_version").Str != vertex.AnthropicVersion || body.Get("model").Exists() {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"code":400,"message":"anthropic_version or model","status":"INVALID_ARGUMENT"}}`)
		return
	}
	block, stop := `{"type":"text","text":"Hello from Vertex."}`, "end_turn"
	if body.Get("tools").Exists() {
		block, stop = `{"type":"tool_use","id":"toolu_vrtx_01","name":"get_weather","input":{"location":"Paris"}}`, "tool_use"
	}
	if !strings.HasSuffix(r.URL.Path, ":streamRawPredict") {
		fmt.Fprintf(w, `{"id":"msg_vrtx_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":20,"cache_read_input_tokens":8,"cache_creation_input_tokens":4,"output_tokens":6}}`, block, stop)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range []string{
		`{"type":"message_start","message":{"id":"msg_vrtx_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello "}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"from Vertex."}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}`,
		`{"type":"message_stop"}`,
	} {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", gjson.Get(ev, "type").Str, ev)
	}
}

// gemini answers generateContent and streamGenerateContent?alt=sse; a
// prompt saying "bomb" is blocked by the safety filters.
func (f *fakeVertex) gemini(w http.ResponseWriter, r *http.Request, body gjson.Result) {
	if !body.Get("contents.0.parts.0.text").Exists() || body.Get("model").Exists() {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT"}}`)
		return
	}
	usage := `"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":2,"totalTokenCount":17}`
	if strings.Contains(body.Get("contents.0.parts.0.text").Str, "bomb") {
		fmt.Fprintf(w, `{"promptFeedback":{"blockReason":"SAFETY"},%s}`, usage)
		return
	}
	part := `{"text":"Hello from Gemini."}`
	if body.Get("tools").Exists() {
		part = `{"functionCall":{"name":"get_weather","args":{"location":"Paris"}}}`
	}
	if strings.HasSuffix(r.URL.Path, ":generateContent") {
		fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[%s]},"finishReason":"STOP"}],%s,"modelVersion":"gemini-2.5-pro"}`, part, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hello "}]}}]}`+"\r\n\r\n")
	fmt.Fprintf(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"from Gemini."}]},"finishReason":"STOP"}],%s}`+"\r\n\r\n", usage)
}

// redirect sends every request to the fake, keeping the URL's host in the
// Host header, so Vertex AI's own URLs are checked as built.
type redirect struct{ to *url.URL }

func (rt redirect) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Host, "googleapis.com") {
		r = r.Clone(r.Context())
		r.Host = r.URL.Host
		r.URL.Scheme, r.URL.Host = rt.to.Scheme, rt.to.Host
	}
	return http.DefaultTransport.RoundTrip(r)
}

// setup returns a provider whose Google hosts are the fake, and a Claude
// deployment in location.
func setup(t *testing.T, location string) (*vertex.Provider, *config.Deployment, *fakeVertex, *vertextest.Account) {
	acct := vertextest.NewAccount(t)
	f := newFakeVertex(t, acct)
	u, _ := url.Parse(f.srv.URL)
	p := vertex.New(&http.Client{Transport: redirect{u}})
	return p, deployment(t, acct, "claude-sonnet-4-5@20250929", location), f, acct
}

// deployment loads a vertex_ai deployment as a config file holds it.
func deployment(t *testing.T, acct *vertextest.Account, model, location string) *config.Deployment {
	t.Helper()
	cfg, err := config.Load([]byte(`model_list:
  - model_name: claude
    litellm_params:
      model: vertex_ai/`+model+`
      vertex_location: `+location+`
      vertex_credentials: '`+acct.JSON+`'
`), nil)
	if err != nil || !cfg.Deployments[0].Implemented {
		t.Fatalf("load: %v %+v", err, cfg)
	}
	return cfg.Deployments[0]
}

func chat(stream bool, extra string) wire.Call {
	body := `{"model":"claude-sonnet-4-5@20250929","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]` + extra
	if stream {
		body += `,"stream":true,"stream_options":{"include_usage":true}`
	}
	return wire.Call{Op: wire.OpChat, Body: []byte(body + "}"), Stream: stream}
}

// read returns a reader of a 200 answer's body.
func read(t *testing.T) func(*http.Response, error) string {
	return func(resp *http.Response, err error) string {
		t.Helper()
		return readBody(t, resp, err)
	}
}

func readBody(t *testing.T, resp *http.Response, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return string(b)
}

func TestClaudeChat(t *testing.T) {
	p, d, f, acct := setup(t, "us-east5")
	ctx := context.Background()
	out := read(t)(p.Do(ctx, d, chat(false, `,"max_tokens":50`)))
	c := f.last(t)
	if c.host != "us-east5-aiplatform.googleapis.com" || c.path != "/v1/projects/"+vertextest.Project+"/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict" || c.query != "" {
		t.Errorf("URL %s %s?%s", c.host, c.path, c.query)
	}
	if c.body.Get("system.0.text").Str != "Be brief." || c.body.Get("messages.0.content").Raw == "" || c.body.Get("max_tokens").Int() != 50 ||
		c.header.Get("Content-Type") != "application/json" || c.header.Get("X-Api-Key") != "" || c.header.Get("Anthropic-Version") != "" {
		t.Errorf("request %v: %s", c.header, c.body.Raw)
	}
	r := gjson.Parse(out)
	if r.Get("object").Str != "chat.completion" || r.Get("choices.0.message.content").Str != "Hello from Vertex." ||
		r.Get("usage.prompt_tokens").Int() != 32 || r.Get("usage.completion_tokens").Int() != 6 || r.Get("usage.prompt_tokens_details.cached_tokens").Int() != 8 {
		t.Errorf("answer %s", out)
	}
	if acct.Exchanges() != 1 || len(acct.Refused()) != 0 {
		t.Errorf("exchanges %d, refused %v", acct.Exchanges(), acct.Refused())
	}

	// Streamed: streamRawPredict, the events translated to OpenAI chunks.
	out = read(t)(p.Do(ctx, d, chat(true, "")))
	c = f.last(t)
	if !strings.HasSuffix(c.path, ":streamRawPredict") || c.query != "" || !c.body.Get("stream").Bool() {
		t.Errorf("stream request %s?%s %s", c.path, c.query, c.body.Raw)
	}
	if !strings.Contains(out, `"content":"Hello "`) || !strings.Contains(out, `"completion_tokens":6`) || !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Errorf("stream %s", out)
	}

	// Tools: Anthropic's tool shape out, a tool call back.
	out = read(t)(p.Do(ctx, d, chat(false, `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}]`)))
	c = f.last(t)
	if c.body.Get("tools.0.name").Str != "get_weather" || !c.body.Get("tools.0.input_schema.properties.location").Exists() {
		t.Errorf("tools %s", c.body.Raw)
	}
	r = gjson.Parse(out)
	if r.Get("choices.0.finish_reason").Str != "tool_calls" || r.Get("choices.0.message.tool_calls.0.function.arguments").Str != `{"location":"Paris"}` {
		t.Errorf("tool answer %s", out)
	}
	if acct.Exchanges() != 1 {
		t.Errorf("the token was not reused: %d exchanges", acct.Exchanges())
	}
}

func TestURLs(t *testing.T) {
	acct := vertextest.NewAccount(t)
	d := deployment(t, acct, "gemini-2.5-pro", "global")
	if got := vertex.URL(d, "google", "gemini-2.5-pro", "streamGenerateContent", true, true); got != "https://aiplatform.googleapis.com/v1/projects/sluice-test/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse" {
		t.Errorf("global: %s", got)
	}
	d = deployment(t, acct, "claude-opus-4", "europe-west1")
	if got := vertex.URL(d, "anthropic", "claude-opus-4", "rawPredict", false, false); got != "https://europe-west1-aiplatform.googleapis.com/v1/projects/sluice-test/locations/europe-west1/publishers/anthropic/models/claude-opus-4:rawPredict" {
		t.Errorf("regional: %s", got)
	}
	// api_base is the whole URL up to the model (LiteLLM): ":method", and
	// alt=sse for any stream.
	d.APIBase = "https://gw.example/v1/projects/p/locations/l/publishers/anthropic/models/claude-opus-4"
	if got := vertex.URL(d, "anthropic", "claude-opus-4", "streamRawPredict", true, false); got != d.APIBase+":streamRawPredict?alt=sse" {
		t.Errorf("api_base: %s", got)
	}
}

// Many requests at once with no token yet make one exchange.
func TestOneExchangeForConcurrentRequests(t *testing.T) {
	p, d, f, acct := setup(t, "us-east5")
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := p.Do(context.Background(), d, chat(false, ""))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := acct.Exchanges(); n != 1 {
		t.Errorf("%d exchanges for 32 concurrent requests, want 1", n)
	}
	if n := f.calls.Len(); n != 32 {
		t.Errorf("%d calls", n)
	}
}

// A token within EarlyExpiry of its end is replaced before it is used.
func TestTokenRenewedBeforeExpiry(t *testing.T) {
	p, d, _, acct := setup(t, "us-east5")
	acct.SetExpiresIn(int64(vertex.EarlyExpiry.Seconds()) / 2)
	for i := range 3 {
		read(t)(p.Do(context.Background(), d, chat(false, "")))
		if n := acct.Exchanges(); n != int64(i+1) {
			t.Fatalf("request %d: %d exchanges", i, n)
		}
	}
}

// A 401 from Vertex renews the token once and resends; a second 401 is the
// answer (no loop).
func TestUnauthorizedRenewsOnce(t *testing.T) {
	p, d, f, acct := setup(t, "us-east5")
	read(t)(p.Do(context.Background(), d, chat(false, "")))
	acct.RevokeAll()
	read(t)(p.Do(context.Background(), d, chat(false, "")))
	if n := acct.Exchanges(); n != 2 {
		t.Errorf("%d exchanges after a revocation, want 2", n)
	}
	acct.SetExpiresIn(3600)
	if n := f.calls.Len(); n != 3 {
		t.Errorf("%d calls, want 3 (one resent)", n)
	}

	// The endpoint keeps issuing tokens Vertex refuses: one renewal, then
	// the 401 is the answer.
	f.mu.Lock()
	f.status, f.errBody = 401, `{"error":{"code":401,"message":"nope","status":"UNAUTHENTICATED"}}`
	f.mu.Unlock()
	resp, err := p.Do(context.Background(), d, chat(false, ""))
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	if n := acct.Exchanges(); n != 3 {
		t.Errorf("%d exchanges, want 3", n)
	}
}

// The Messages API passes through: the client's body without model, with
// Vertex's anthropic_version, its anthropic-beta header; the answer as it
// came.
func TestMessagesPassThrough(t *testing.T) {
	p, d, f, _ := setup(t, "global")
	body := `{"model":"claude-sonnet-4-5@20250929","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":1024}}`
	c := wire.Call{Op: wire.OpMessages, Body: []byte(body), Stream: true, Anthropic: &wire.AnthropicHeaders{Beta: "context-1m-2025-08-07"}}
	if !p.NativeMessages(d, c) || p.NativeMessages(d, wire.Call{Op: wire.OpCountTokens, Body: []byte(body)}) {
		t.Fatal("NativeMessages")
	}
	out := read(t)(p.Messages(context.Background(), d, c))
	got := f.last(t)
	if got.host != "aiplatform.googleapis.com" || got.path != "/v1/projects/sluice-test/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict" ||
		got.header.Get("Anthropic-Beta") != "context-1m-2025-08-07" || got.body.Get("thinking.budget_tokens").Int() != 1024 || !got.body.Get("stream").Bool() {
		t.Errorf("request %s %s %v %s", got.host, got.path, got.header, got.body.Raw)
	}
	if !strings.HasPrefix(out, "event: message_start\ndata: ") || !strings.Contains(out, "from Vertex.") {
		t.Errorf("answer %s", out)
	}
}

// Vertex's errors are classified by the registry: 429 RESOURCE_EXHAUSTED a
// rate limit, the context window, a safety block; a missing publisher model
// is the deployment's fault.
func TestErrors(t *testing.T) {
	_, d, f, _ := setup(t, "us-east5")
	disp := providers.New(&http.Client{Transport: redirect{mustURL(f.srv.URL)}})
	providerstest.Errors(t, []providerstest.ErrorCase{
		{Name: "429", Status: 429, Body: `{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model.","status":"RESOURCE_EXHAUSTED"}}`, Kind: apierr.UpstreamRateLimited},
		{Name: "context", Status: 400, Body: `{"error":{"code":400,"message":"The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`, Kind: apierr.ContextWindowExceeded},
		{Name: "claude context", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, Kind: apierr.ContextWindowExceeded},
		{Name: "safety", Status: 400, Body: `{"error":{"code":400,"message":"The prompt was blocked by the safety filters.","status":"INVALID_ARGUMENT"}}`, Kind: apierr.ContentPolicy},
		{Name: "403", Status: 403, Body: `{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied","status":"PERMISSION_DENIED"}}`, Kind: apierr.UpstreamAuth},
		{Name: "404", Status: 404, Body: `{"error":{"code":404,"message":"Publisher Model ` + "`projects/p/locations/l/publishers/anthropic/models/claude-x`" + ` not found.","status":"NOT_FOUND"}}`, Kind: apierr.UpstreamNotFound},
	}, func(t *testing.T, c providerstest.ErrorCase) (*http.Response, error) {
		f.mu.Lock()
		f.status, f.errBody = c.Status, c.Body
		f.mu.Unlock()
		return disp.Do(context.Background(), d, chat(c.Stream, ""))
	}, "PRIVATE KEY")
}

// A token endpoint that refuses the key, echoing the assertion: the error
// quotes neither the assertion nor the key.
func TestExchangeRefused(t *testing.T) {
	p, d, _, acct := setup(t, "us-east5")
	acct.Fail(400, `{"error":"invalid_grant","error_description":"Invalid JWT Signature: ASSERTION"}`)
	_, err := p.Do(context.Background(), d, chat(false, ""))
	var e *apierr.Error
	if !errors.As(err, &e) || e.Kind != apierr.UpstreamAuth || !strings.Contains(e.Error(), "(400 invalid_grant)") {
		t.Fatalf("%v", err)
	}
	for _, a := range acct.Assertions() {
		if a == "" || strings.Contains(e.Error(), a[:20]) || strings.Contains(e.Error(), "PRIVATE KEY") {
			t.Errorf("error quotes a credential: %v", e)
		}
	}
	acct.Fail(0, "")
	read(t)(p.Do(context.Background(), d, chat(false, "")))
}

func mustURL(s string) *url.URL { u, _ := url.Parse(s); return u }

// Gemini on Vertex: the gemini package's wire format at Vertex's URL, with
// the bearer token.
func TestGeminiChat(t *testing.T) {
	acct := vertextest.NewAccount(t)
	f := newFakeVertex(t, acct)
	disp := providers.New(&http.Client{Transport: redirect{mustURL(f.srv.URL)}})
	d := deployment(t, acct, "gemini-2.5-pro", "global")
	ctx := context.Background()
	body := func(text, extra string) []byte {
		return []byte(`{"model":"gemini-2.5-pro","messages":[{"role":"user","content":"` + text + `"}]` + extra + `}`)
	}
	out := read(t)(disp.Do(ctx, d, wire.Call{Op: wire.OpChat, Body: body("hi", "")}))
	c := f.last(t)
	if c.host != "aiplatform.googleapis.com" || c.path != "/v1/projects/sluice-test/locations/global/publishers/google/models/gemini-2.5-pro:generateContent" || c.query != "" {
		t.Errorf("URL %s %s?%s", c.host, c.path, c.query)
	}
	r := gjson.Parse(out)
	if r.Get("choices.0.message.content").Str != "Hello from Gemini." || r.Get("usage.completion_tokens").Int() != 7 {
		t.Errorf("answer %s", out)
	}
	out = read(t)(disp.Do(ctx, d, wire.Call{Op: wire.OpChat, Stream: true, Body: body("hi", `,"stream":true,"stream_options":{"include_usage":true}`)}))
	if c = f.last(t); !strings.HasSuffix(c.path, ":streamGenerateContent") || c.query != "alt=sse" {
		t.Errorf("stream URL %s?%s", c.path, c.query)
	}
	if !strings.Contains(out, `"content":"Hello "`) || !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Errorf("stream %s", out)
	}
	out = read(t)(disp.Do(ctx, d, wire.Call{Op: wire.OpChat, Body: body("weather?", `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}]`)}))
	if r = gjson.Parse(out); r.Get("choices.0.message.tool_calls.0.function.name").Str != "get_weather" {
		t.Errorf("tool answer %s", out)
	}
	_, err := disp.Do(ctx, d, wire.Call{Op: wire.OpChat, Body: body("a bomb", "")})
	var e *apierr.Error
	if !errors.As(err, &e) || e.Kind != apierr.ContentPolicy {
		t.Errorf("safety block: %v", err)
	}
	if _, err := disp.Do(ctx, d, wire.Call{Op: wire.OpEmbeddings, Body: []byte(`{"model":"gemini-2.5-pro","input":"x"}`)}); !errors.As(err, &e) || e.Kind != apierr.InvalidRequest {
		t.Errorf("embeddings: %v", err)
	}
	if acct.Exchanges() != 1 {
		t.Errorf("%d exchanges", acct.Exchanges())
	}
}

// Requests refused at once with a revoked token renew it once between
// them, and each is resent with the new one.
func TestConcurrentUnauthorizedRenewOnce(t *testing.T) {
	p, d, _, acct := setup(t, "us-east5")
	read(t)(p.Do(context.Background(), d, chat(false, "")))
	acct.RevokeAll()
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := p.Do(context.Background(), d, chat(false, ""))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	if n := acct.Exchanges(); n != 2 {
		t.Errorf("%d exchanges, want 2", n)
	}
}

// A key read from a secret that rotates (config's BindCredentials): the
// next request signs with the new key, at its own token endpoint.
func TestRotatedCredentials(t *testing.T) {
	p, d, f, acct := setup(t, "us-east5")
	read(t)(p.Do(context.Background(), d, chat(false, "")))
	next := vertextest.NewAccount(t)
	f.also.Store(next)
	var cur atomic.Pointer[string]
	cur.Store(&next.JSON)
	d.Vertex.BindCredentials(&cur)
	read(t)(p.Do(context.Background(), d, chat(false, "")))
	read(t)(p.Do(context.Background(), d, chat(false, "")))
	if acct.Exchanges() != 1 || next.Exchanges() != 1 || len(next.Refused()) != 0 {
		t.Errorf("exchanges: old key %d, new key %d (refused %v)", acct.Exchanges(), next.Exchanges(), next.Refused())
	}
	if !next.Authorized(&http.Request{Header: f.last(t).header}) {
		t.Error("the last call did not carry the new key's token")
	}
}
