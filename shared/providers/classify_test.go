package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

const azureKey = "0123456789abcdef0123456789abcdef"

func TestClassify(t *testing.T) {
	d := &config.Deployment{ID: "d1", APIKey: azureKey}
	long := strings.Repeat("y", 400)
	tests := []struct {
		name       string
		status     int
		header     http.Header
		body       string
		kind       apierr.Kind
		httpStatus int           // what the client would see
		retryAfter time.Duration // exact
		msg        string
	}{
		{
			name:   "openai context_length_exceeded",
			status: 400,
			body:   `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			kind:   apierr.ContextWindowExceeded, httpStatus: 400,
			msg: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. (deployment d1 returned 400)",
		},
		{
			name:   "code alone decides context length",
			status: 400,
			body:   `{"error":{"message":"too long","code":"context_length_exceeded"}}`,
			kind:   apierr.ContextWindowExceeded, httpStatus: 400,
			msg: "too long (deployment d1 returned 400)",
		},
		{
			name:   "vllm maximum context length message, top-level message",
			status: 400,
			body:   `{"object":"error","message":"This model's Maximum Context Length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`,
			kind:   apierr.ContextWindowExceeded, httpStatus: 400,
			msg: "This model's Maximum Context Length is 4096 tokens. However, you requested 5000 tokens. (deployment d1 returned 400)",
		},
		{
			name:   "prompt is too long",
			status: 400,
			body:   `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`,
			kind:   apierr.ContextWindowExceeded, httpStatus: 400,
			msg: "prompt is too long: 210000 tokens > 200000 maximum (deployment d1 returned 400)",
		},
		{
			name:   "a 429 whose message says too many tokens is a rate limit",
			status: 429,
			header: http.Header{"Retry-After": {"3"}},
			body:   `{"error":{"message":"Tokens per minute limit exceeded - too many tokens processed.","type":"x"}}`,
			kind:   apierr.UpstreamRateLimited, httpStatus: 429, retryAfter: 3 * time.Second,
			msg: "Tokens per minute limit exceeded - too many tokens processed. (deployment d1 returned 429)",
		},
		{
			name:   "context length beats a 5xx status",
			status: 500,
			body:   `{"error":{"message":"input exceeds the context window of this model"}}`,
			kind:   apierr.ContextWindowExceeded, httpStatus: 400,
			msg: "input exceeds the context window of this model (deployment d1 returned 500)",
		},
		{
			name:   "azure content_filter with innererror",
			status: 400,
			body: `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,` +
				`"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}}}`,
			kind: apierr.ContentPolicy, httpStatus: 400,
			msg: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. (deployment d1 returned 400)",
		},
		{
			name:   "innererror ResponsibleAIPolicyViolation alone",
			status: 400,
			body:   `{"error":{"message":"blocked","innererror":{"code":"ResponsibleAIPolicyViolation"}}}`,
			kind:   apierr.ContentPolicy, httpStatus: 400,
			msg: "blocked (deployment d1 returned 400)",
		},
		{
			name:   "innererror ResponsibleAIPolicyViolation under another code",
			status: 400,
			body:   `{"error":{"message":"blocked","code":"invalid_prompt","innererror":{"code":"ResponsibleAIPolicyViolation"}}}`,
			kind:   apierr.ContentPolicy, httpStatus: 400,
			msg: "blocked (deployment d1 returned 400)",
		},
		{
			name:   "openai content_policy_violation",
			status: 400,
			body:   `{"error":{"message":"Your request was rejected as a result of our safety system.","type":"invalid_request_error","code":"content_policy_violation"}}`,
			kind:   apierr.ContentPolicy, httpStatus: 400,
			msg: "Your request was rejected as a result of our safety system. (deployment d1 returned 400)",
		},
		{
			name:   "429 with Retry-After seconds",
			status: 429,
			header: http.Header{"Retry-After": {"7"}},
			body:   `{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM)","type":"tokens","code":"rate_limit_exceeded"}}`,
			kind:   apierr.UpstreamRateLimited, httpStatus: 429, retryAfter: 7 * time.Second,
			msg: "Rate limit reached for gpt-4o on tokens per min (TPM) (deployment d1 returned 429)",
		},
		{
			name:   "429 retry-after-ms wins over Retry-After",
			status: 429,
			header: http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"7"}},
			kind:   apierr.UpstreamRateLimited, httpStatus: 429, retryAfter: 1500 * time.Millisecond,
			msg: "Too Many Requests (deployment d1 returned 429)",
		},
		{
			name:   "429 without a hint",
			status: 429,
			body:   `{"error":{"message":"slow down"}}`,
			kind:   apierr.UpstreamRateLimited, httpStatus: 429,
			msg: "slow down (deployment d1 returned 429)",
		},
		{
			name:   "429 with an unparseable Retry-After",
			status: 429,
			header: http.Header{"Retry-After": {"soon"}},
			kind:   apierr.UpstreamRateLimited, httpStatus: 429,
			msg: "Too Many Requests (deployment d1 returned 429)",
		},
		{
			name:   "408",
			status: 408,
			kind:   apierr.UpstreamTimeout, httpStatus: 504,
			msg: "Request Timeout (deployment d1 returned 408)",
		},
		{
			name:   "504",
			status: 504,
			body:   "upstream request timeout",
			kind:   apierr.UpstreamTimeout, httpStatus: 504,
			msg: "upstream request timeout (deployment d1 returned 504)",
		},
		{
			name:   "401 with a key in the message",
			status: 401,
			body:   `{"error":{"message":"Incorrect API key provided: sk-proj-AbCdEf123456****wxyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			kind:   apierr.UpstreamAuth, httpStatus: 502,
			msg: "Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys. (deployment d1 returned 401)",
		},
		{
			name:   "403 echoing the deployment's own key",
			status: 403,
			body:   `{"error":{"message":"key ` + azureKey + ` is not allowed"}}`,
			kind:   apierr.UpstreamAuth, httpStatus: 502,
			msg: "key [redacted] is not allowed (deployment d1 returned 403)",
		},
		{
			name:   "404",
			status: 404,
			body:   `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`,
			kind:   apierr.UpstreamNotFound, httpStatus: 502,
			msg: "The API deployment for this resource does not exist. (deployment d1 returned 404)",
		},
		{
			name:   "500",
			status: 500,
			body:   `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`,
			kind:   apierr.UpstreamServer, httpStatus: 502,
			msg: "The server had an error while processing your request. (deployment d1 returned 500)",
		},
		{
			name:   "502 html body",
			status: 502,
			body:   "<html><body>Bad gateway</body></html>\n",
			kind:   apierr.UpstreamServer, httpStatus: 502,
			msg: "<html><body>Bad gateway</body></html> (deployment d1 returned 502)",
		},
		{
			name:   "503 keeps its status and Retry-After",
			status: 503,
			header: http.Header{"Retry-After": {"30"}},
			body:   `{"error":{"message":"overloaded"}}`,
			kind:   apierr.UpstreamServer, httpStatus: 503, retryAfter: 30 * time.Second,
			msg: "overloaded (deployment d1 returned 503)",
		},
		{
			name:   "599",
			status: 599,
			kind:   apierr.UpstreamServer, httpStatus: 502,
			msg: "upstream error (deployment d1 returned 599)",
		},
		{
			name:   "400",
			status: 400,
			body:   `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`,
			kind:   apierr.UpstreamBadRequest, httpStatus: 400,
			msg: "Invalid value for 'temperature' (deployment d1 returned 400)",
		},
		{
			name:   "422 fastapi detail",
			status: 422,
			body:   `{"detail":"field required"}`,
			kind:   apierr.UpstreamBadRequest, httpStatus: 400,
			msg: "field required (deployment d1 returned 422)",
		},
		{
			name:   "409",
			status: 409,
			kind:   apierr.UpstreamBadRequest, httpStatus: 400,
			msg: "Conflict (deployment d1 returned 409)",
		},
		{
			name:   "error.message preferred over message",
			status: 400,
			body:   `{"message":"outer","error":{"message":"inner"}}`,
			kind:   apierr.UpstreamBadRequest, httpStatus: 400,
			msg: "inner (deployment d1 returned 400)",
		},
		{
			name:   "JSON body with surrounding whitespace",
			status: 400,
			body:   "\n\t {\"error\":{\"message\":\"spaced\"}} \r\n",
			kind:   apierr.UpstreamBadRequest, httpStatus: 400,
			msg: "spaced (deployment d1 returned 400)",
		},
		{
			name:   "long text body truncated to 300 bytes",
			status: 500,
			body:   long,
			kind:   apierr.UpstreamServer, httpStatus: 502,
			msg: long[:300] + "... (deployment d1 returned 500)",
		},
		{
			name:   "empty body",
			status: 400,
			kind:   apierr.UpstreamBadRequest, httpStatus: 400,
			msg: "Bad Request (deployment d1 returned 400)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header
			if h == nil {
				h = http.Header{}
			}
			e := Classify(d, tt.status, h, []byte(tt.body))
			if e.Kind != tt.kind {
				t.Errorf("Kind = %v, want %v", e.Kind, tt.kind)
			}
			if got := e.HTTPStatus(); got != tt.httpStatus {
				t.Errorf("HTTPStatus() = %d, want %d", got, tt.httpStatus)
			}
			if e.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.retryAfter)
			}
			if e.Message != tt.msg {
				t.Errorf("Message = %q\n           want %q", e.Message, tt.msg)
			}
			if strings.Contains(e.Message, azureKey) {
				t.Errorf("Message leaks the deployment key: %q", e.Message)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct {
		name string
		key  string
		msg  string
		want string
	}{
		{"nothing to redact", "", "plain message", "plain message"},
		{"openai key", "", "key sk-abcdef123 is bad", "key [redacted] is bad"},
		{"project key with stars", "", "Incorrect API key provided: sk-proj-Ab_C-d****1234.", "Incorrect API key provided: [redacted]."},
		{"pk and rk prefixes", "", "pk-ABCDEF1 and rk-123456", "[redacted] and [redacted]"},
		{"key at start and end", "", "sk-aaaaaa sk-bbbbbb", "[redacted] [redacted]"},
		{"too short to be a key", "", "sk-abcde", "sk-abcde"},
		{"not at a word boundary", "", "task-manager disk-abcdefgh", "task-manager disk-abcdefgh"},
		{"deployment key without prefix", azureKey, "bad key " + azureKey + ", again " + azureKey, "bad key [redacted], again [redacted]"},
		{"short deployment key left alone", "abc", "abc abcdef", "abc abcdef"},
		{"four-character deployment key", "wxyz", "got wxyz", "got [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.msg, &config.Deployment{APIKey: tt.key}); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
	t.Run("nil deployment", func(t *testing.T) {
		if got, want := Redact("x sk-abcdefgh y", nil), "x [redacted] y"; got != want {
			t.Errorf("Redact = %q, want %q", got, want)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"zero", http.Header{"Retry-After": {"0"}}, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"garbage", http.Header{"Retry-After": {"later"}}, 0},
		{"http date ahead", http.Header{"Retry-After": {date(90 * time.Second)}}, 90 * time.Second},
		{"http date passed", http.Header{"Retry-After": {date(-90 * time.Second)}}, 0},
		{"http date now", http.Header{"Retry-After": {date(0)}}, 0},
		{"rfc850 date ahead", http.Header{"Retry-After": {now.Add(2 * time.Minute).Format(time.RFC850)}}, 2 * time.Minute},
		{"milliseconds", http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"fractional milliseconds", http.Header{"Retry-After-Ms": {"0.5"}}, 500 * time.Microsecond},
		{"milliseconds win", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{"zero milliseconds fall back", http.Header{"Retry-After-Ms": {"0"}, "Retry-After": {"2"}}, 2 * time.Second},
		{"bad milliseconds fall back", http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"2"}}, 2 * time.Second},
		{"negative milliseconds fall back", http.Header{"Retry-After-Ms": {"-1"}, "Retry-After": {"3"}}, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RetryAfter(tt.h, now); got != tt.want {
				t.Errorf("RetryAfter(%v) = %v, want %v", tt.h, got, tt.want)
			}
		})
	}
}

// endless is an upstream error body that never ends; it counts what is read.
type endless struct{ n int }

func (r *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'z'
	}
	r.n += len(p)
	return len(p), nil
}

func TestStatusErrorReadsAtMost64KiB(t *testing.T) {
	body := &endless{}
	resp := &http.Response{StatusCode: 500, Header: http.Header{}, Body: io.NopCloser(body)}
	e := StatusError(&config.Deployment{ID: "d1"}, resp)
	if body.n > maxErrorBody {
		t.Errorf("read %d bytes, want at most %d", body.n, maxErrorBody)
	}
	if want := strings.Repeat("z", 300) + "... (deployment d1 returned 500)"; e.Message != want {
		t.Errorf("Message = %q, want %q", e.Message, want)
	}
	if e.Kind != apierr.UpstreamServer {
		t.Errorf("Kind = %v, want %v", e.Kind, apierr.UpstreamServer)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestTransportError(t *testing.T) {
	d := &config.Deployment{ID: "d1"}
	own := &apierr.Error{Kind: apierr.ContentPolicy, Message: "already classified"}
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		kind apierr.Kind
		msg  string
	}{
		{"deadline exceeded", context.Background(), fmt.Errorf("Post: %w", context.DeadlineExceeded), apierr.UpstreamTimeout, "deployment d1 timed out"},
		{"context past its deadline", expired, errors.New("request failed"), apierr.UpstreamTimeout, "deployment d1 timed out"},
		{"net timeout", context.Background(), &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, apierr.UpstreamTimeout, "deployment d1 timed out"},
		{"connection refused", context.Background(), &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, apierr.UpstreamConnection, "could not reach deployment d1"},
		{"canceled", context.Background(), context.Canceled, apierr.UpstreamConnection, "could not reach deployment d1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := TransportError(tt.ctx, d, tt.err)
			if e.Kind != tt.kind || e.Message != tt.msg {
				t.Errorf("TransportError = %v %q, want %v %q", e.Kind, e.Message, tt.kind, tt.msg)
			}
			if !errors.Is(e, tt.err) {
				t.Errorf("the cause %v is not wrapped", tt.err)
			}
		})
	}
	t.Run("an apierr passes through", func(t *testing.T) {
		if e := TransportError(context.Background(), d, fmt.Errorf("body: %w", own)); e != own {
			t.Errorf("TransportError = %v, want the wrapped *apierr.Error itself", e)
		}
	})
}

// closeRecorder notes whether a response body was closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestDispatcherDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok/chat/completions":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"x"}`)
		case "/limited/chat/completions":
			w.Header().Set("Retry-After", "4")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"limited"}}`)
		case "/gone/chat/completions":
			w.WriteHeader(http.StatusNotFound)
		default:
			t.Errorf("unexpected path %s", r.URL.Path)
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	// A port nothing listens on: a listener opened and closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String()
	_ = l.Close()

	p := New(srv.Client())
	call := wire.Call{Op: wire.OpChat, Body: []byte(`{"model":"m"}`)}
	tests := []struct {
		name       string
		d          config.Deployment
		wantKind   apierr.Kind // ignored when wantOK
		wantOK     bool
		retryAfter time.Duration
	}{
		{"2xx", config.Deployment{ID: "a", Protocol: config.ProtocolOpenAI, APIBase: srv.URL + "/ok"}, 0, true, 0},
		{"429", config.Deployment{ID: "b", Protocol: config.ProtocolOpenAI, APIBase: srv.URL + "/limited"}, apierr.UpstreamRateLimited, false, 4 * time.Second},
		{"404", config.Deployment{ID: "c", Protocol: config.ProtocolOpenAI, APIBase: srv.URL + "/gone"}, apierr.UpstreamNotFound, false, 0},
		{"connection refused", config.Deployment{ID: "e", Protocol: config.ProtocolOpenAI, APIBase: refused}, apierr.UpstreamConnection, false, 0},
		{"provider not implemented", config.Deployment{ID: "f", Provider: "bedrock"}, apierr.NotImplemented, false, 0},
		{"bad base URL", config.Deployment{ID: "g", Protocol: config.ProtocolOpenAI, APIBase: "http://bad host"}, apierr.Internal, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resp, err := p.Do(ctx, &tt.d, call)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("Do: %v", err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 || string(b) != `{"id":"x"}` {
					t.Errorf("response = %d %s, want 200 {\"id\":\"x\"}", resp.StatusCode, b)
				}
				return
			}
			if resp != nil {
				t.Errorf("Do returned a response with an error: %d", resp.StatusCode)
			}
			var e *apierr.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not an *apierr.Error", err, err)
			}
			if e.Kind != tt.wantKind || e.RetryAfter != tt.retryAfter {
				t.Errorf("error = %v (RetryAfter %v), want kind %v RetryAfter %v", e, e.RetryAfter, tt.wantKind, tt.retryAfter)
			}
		})
	}
}

func TestCheckClosesFailedBodies(t *testing.T) {
	body := &closeRecorder{Reader: strings.NewReader(`{"error":{"message":"no"}}`)}
	resp := &http.Response{StatusCode: 500, Header: http.Header{}, Body: body}
	got, err := check(context.Background(), &config.Deployment{ID: "d"}, resp, nil)
	if got != nil || err == nil {
		t.Fatalf("check = %v, %v; want nil and an error", got, err)
	}
	if !body.closed {
		t.Error("the failed response's body was not closed")
	}
	ok := &closeRecorder{Reader: strings.NewReader(`{}`)}
	resp = &http.Response{StatusCode: 201, Header: http.Header{}, Body: ok}
	if got, err := check(context.Background(), &config.Deployment{ID: "d"}, resp, nil); got != resp || err != nil {
		t.Fatalf("check(201) = %v, %v; want the response", got, err)
	}
	if ok.closed {
		t.Error("a successful response's body was closed before the caller read it")
	}
}

// TestDispatcherMockErrors checks that LiteLLM's mock_response error names
// reach the router as the kinds a real provider's failure would.
func TestDispatcherMockErrors(t *testing.T) {
	tests := []struct {
		mock       string
		kind       apierr.Kind
		httpStatus int
	}{
		{"litellm.RateLimitError", apierr.UpstreamRateLimited, 429},
		{"litellm.InternalServerError", apierr.UpstreamServer, 502},
		{"litellm.ServiceUnavailableError", apierr.UpstreamServer, 503},
		{"litellm.Timeout", apierr.UpstreamTimeout, 504},
		{"litellm.APIConnectionError", apierr.UpstreamServer, 502},
		{"litellm.BadRequestError", apierr.UpstreamBadRequest, 400},
		{"litellm.AuthenticationError", apierr.UpstreamAuth, 502},
		{"litellm.NotFoundError", apierr.UpstreamNotFound, 502},
		{"litellm.ContextWindowExceededError", apierr.ContextWindowExceeded, 400},
		{"litellm.ContentPolicyViolationError", apierr.ContentPolicy, 400},
	}
	p := New(http.DefaultClient)
	for _, tt := range tests {
		t.Run(tt.mock, func(t *testing.T) {
			for _, d := range []config.Deployment{
				{ID: "m1", Protocol: config.ProtocolMock, Model: "gpt-4o", MockResponse: &tt.mock},
				{ID: "m2", Protocol: config.ProtocolOpenAI, Model: "gpt-4o", MockResponse: &tt.mock},
			} {
				resp, err := p.Do(context.Background(), &d, wire.Call{Op: wire.OpChat, Body: []byte(`{"model":"gpt-4o"}`)})
				if resp != nil {
					t.Fatalf("%s: Do returned %d, want an error", d.ID, resp.StatusCode)
				}
				e := apierr.From(err)
				if e.Kind != tt.kind || e.HTTPStatus() != tt.httpStatus {
					t.Errorf("%s: error = %v (status %d), want %v (status %d)", d.ID, e, e.HTTPStatus(), tt.kind, tt.httpStatus)
				}
			}
		})
	}
	t.Run("per-request mock on a mock deployment", func(t *testing.T) {
		m := "litellm.RateLimitError"
		_, err := p.Do(context.Background(), &config.Deployment{ID: "m3", Protocol: config.ProtocolMock},
			wire.Call{Op: wire.OpChat, Body: []byte(`{}`), MockResponse: &m})
		if k := apierr.KindOf(err); k != apierr.UpstreamRateLimited {
			t.Errorf("kind = %v, want %v", k, apierr.UpstreamRateLimited)
		}
	})
}

// A key cut in half by the message limit must not survive in part.
func TestRedactBeforeCut(t *testing.T) {
	d := &config.Deployment{ID: "d1", APIKey: "0123456789abcdef0123456789abcdef"}
	body := []byte(strings.Repeat("x", 270) + d.APIKey + " trailing")
	e := Classify(d, 500, nil, body)
	if strings.Contains(e.Message, "0123456789abcdef0123") {
		t.Fatalf("part of the key leaked: %q", e.Message)
	}
}

func TestRetryAfterHuge(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, v := range []string{"inf", "1e20", "9223372036"} {
		h := http.Header{"Retry-After": {v}}
		if got := RetryAfter(h, now); got != 24*time.Hour {
			t.Errorf("Retry-After %s = %v, want the 24h cap", v, got)
		}
	}
	if got := RetryAfter(http.Header{"Retry-After": {"NaN"}}, now); got != 0 {
		t.Errorf("NaN = %v", got)
	}
}

func TestPlainStringError(t *testing.T) {
	e := Classify(&config.Deployment{ID: "d1"}, 404, nil, []byte(`{"error":"model 'llama3' not found, try pulling it first"}`))
	if e.Message != "model 'llama3' not found, try pulling it first (deployment d1 returned 404)" {
		t.Fatalf("Message = %q", e.Message)
	}
}
