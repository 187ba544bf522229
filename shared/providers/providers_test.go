package providers

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/catalog"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

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

// The pass-through operations reach OpenAI-compatible and Azure deployments
// only; a translating vendor, or a mock_response deployment asked for
// anything but chat, text completions or embeddings, is a 400, never a chat
// answer in an image's place.
func TestUnsupportedOps(t *testing.T) {
	cfg, err := config.Load([]byte(`model_list:
  - model_name: claude
    litellm_params: {model: anthropic/claude-3-5-haiku-20241022, api_key: k}
  - model_name: mocked
    litellm_params: {model: openai/gpt-4o, mock_response: "hi"}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	claude, mocked := cfg.Deployments[0], cfg.Deployments[1]
	d := New(nil)
	for _, tt := range []struct {
		dep  *config.Deployment
		op   wire.Op
		want string // "" = served
	}{
		{claude, wire.OpCompletions, "does not serve /completions"},
		{claude, wire.OpImages, "does not serve /images/generations"},
		{mocked, wire.OpImages, "serves chat, text completions and embeddings only"},
		{mocked, wire.OpCompletions, ""},
	} {
		resp, err := d.Do(context.Background(), tt.dep, wire.Call{Op: tt.op, Body: []byte(`{"model":"x","prompt":"p"}`)})
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s %s: %v", tt.dep.ModelName, tt.op, err)
			} else {
				resp.Body.Close()
			}
			continue
		}
		if apierr.KindOf(err) != apierr.InvalidRequest || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s: %v, want a 400 saying %q", tt.dep.ModelName, tt.op, err, tt.want)
		}
	}
}

// TestEveryPrefixHasItsVendor checks the catalog against the registry: a
// prefix is implemented exactly when a vendor serves its protocol.
func TestEveryPrefixHasItsVendor(t *testing.T) {
	p := New(nil)
	for _, prefix := range catalog.Prefixes() {
		e, _ := catalog.Lookup(prefix)
		if served := p.vendors[e.Protocol] != nil; served != e.Implemented() {
			t.Errorf("%s: protocol %d served %v, implemented %v", prefix, e.Protocol, served, e.Implemented())
		}
	}
}
