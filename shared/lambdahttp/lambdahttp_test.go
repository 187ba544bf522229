package lambdahttp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/lambdahttp"
)

// internalError is the client's whole view of a panic.
var internalError = string(apierr.JSON(apierr.New(apierr.Internal, "internal error")))

// guard bounds a wait that only a broken adapter would make long; it is a
// deadlock guard, not a timing assertion.
const guard = 10 * time.Second

func event(method, path, query, body string, headers map[string]string) *events.LambdaFunctionURLRequest {
	ev := &events.LambdaFunctionURLRequest{
		RawPath:        path,
		RawQueryString: query,
		Headers:        headers,
		Body:           body,
	}
	ev.RequestContext.DomainName = "abc123.lambda-url.us-east-1.on.aws"
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.HTTP.Path = path
	ev.RequestContext.HTTP.SourceIP = "203.0.113.7"
	return ev
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func invoke(t *testing.T, h http.Handler, ev *events.LambdaFunctionURLRequest, opts ...lambdahttp.Option) *events.LambdaFunctionURLStreamingResponse {
	t.Helper()
	opts = append([]lambdahttp.Option{lambdahttp.WithLogger(quietLogger())}, opts...)
	resp, err := lambdahttp.Wrap(h, opts...)(context.Background(), ev)
	if err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	t.Cleanup(func() { resp.Close() })
	return resp
}

func TestRequestConversion(t *testing.T) {
	raw := []byte{0, 1, 2, 0xff}
	tests := []struct {
		name  string
		ev    *events.LambdaFunctionURLRequest
		check func(t *testing.T, r *http.Request, body []byte)
	}{
		{
			name: "post with query, headers and cookies",
			ev: func() *events.LambdaFunctionURLRequest {
				ev := event("POST", "/v1/chat/completions", "a=1&b=x%20y", `{"model":"m"}`, map[string]string{
					"authorization": "Bearer sk-1",
					"content-type":  "application/json",
					"x-multi":       "one,two",
				})
				ev.Cookies = []string{"s=1", "t=2"}
				return ev
			}(),
			check: func(t *testing.T, r *http.Request, body []byte) {
				if r.Method != "POST" || r.URL.Path != "/v1/chat/completions" || r.URL.Query().Get("b") != "x y" {
					t.Errorf("method/url = %s %s", r.Method, r.URL)
				}
				if r.RequestURI != "/v1/chat/completions?a=1&b=x%20y" {
					t.Errorf("RequestURI = %q", r.RequestURI)
				}
				if r.Host != "abc123.lambda-url.us-east-1.on.aws" || r.RemoteAddr != "203.0.113.7" {
					t.Errorf("host %q remote %q", r.Host, r.RemoteAddr)
				}
				if got := r.Header.Get("Authorization"); got != "Bearer sk-1" {
					t.Errorf("Authorization = %q", got)
				}
				if got := r.Header.Get("X-Multi"); got != "one,two" {
					t.Errorf("X-Multi = %q", got)
				}
				if c, err := r.Cookie("t"); err != nil || c.Value != "2" {
					t.Errorf("cookie t = %v, %v", c, err)
				}
				if string(body) != `{"model":"m"}` || r.ContentLength != int64(len(body)) {
					t.Errorf("body %q, ContentLength %d", body, r.ContentLength)
				}
			},
		},
		{
			name: "base64 body",
			ev: func() *events.LambdaFunctionURLRequest {
				ev := event("PUT", "/bin", "", base64.StdEncoding.EncodeToString(raw), nil)
				ev.IsBase64Encoded = true
				return ev
			}(),
			check: func(t *testing.T, r *http.Request, body []byte) {
				if !bytes.Equal(body, raw) {
					t.Errorf("body = %v, want %v", body, raw)
				}
			},
		},
		{
			name: "get without body or path",
			ev:   event("GET", "", "", "", nil),
			check: func(t *testing.T, r *http.Request, body []byte) {
				if r.URL.Path != "/" || len(body) != 0 || r.Body != http.NoBody {
					t.Errorf("path %q body %q (%T)", r.URL.Path, body, r.Body)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(done)
				body, err := io.ReadAll(r.Body)
				if err != nil {
					t.Errorf("read body: %v", err)
				}
				ev, ok := lambdahttp.EventFromContext(r.Context())
				if !ok || ev != tt.ev {
					t.Errorf("EventFromContext = %v, %v", ev, ok)
				}
				tt.check(t, r, body)
			})
			resp := invoke(t, h, tt.ev)
			<-done
			io.Copy(io.Discard, resp.Body)
		})
	}
}

func TestNotAFunctionURLEvent(t *testing.T) {
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("handler called") })
	for _, ev := range []*events.LambdaFunctionURLRequest{nil, {}} {
		if _, err := lambdahttp.Wrap(h)(context.Background(), ev); err == nil {
			t.Errorf("Wrap(%v) succeeded", ev)
		}
	}
	bad := event("POST", "/", "", "%%%", nil)
	bad.IsBase64Encoded = true
	if _, err := lambdahttp.Wrap(h)(context.Background(), bad); err == nil {
		t.Error("bad base64 body accepted")
	}
}

// writesThenPanics is a handler that starts a body of contentType with
// written, flushed when flush is set, and then panics with v.
func writesThenPanics(contentType, written string, flush bool, v any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, written)
		if flush {
			w.(http.Flusher).Flush()
		}
		panic(v)
	}
}

func TestPanics(t *testing.T) {
	tests := []struct {
		name        string
		handler     http.HandlerFunc
		wantStatus  int
		wantType    string
		wantBody    string
		wantReadErr string // error type reported through the trailers, if the stream is cut
		wantLog     string
	}{
		{
			name: "before headers",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Secret-Upstream", "sk-live-123")
				panic("boom sk-live-123")
			},
			wantStatus: 500,
			wantType:   "application/json",
			wantBody:   internalError,
			wantLog:    "boom sk-live-123",
		},
		{
			name: "invalid status code",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(42)
			},
			wantStatus: 500,
			wantType:   "application/json",
			wantBody:   internalError,
			wantLog:    "invalid WriteHeader code 42",
		},
		{
			name:       "after an SSE stream started",
			handler:    writesThenPanics("text/event-stream; charset=utf-8", "data: {\"n\":1}\n\n", true, errors.New("upstream exploded")),
			wantStatus: 200,
			wantType:   "text/event-stream; charset=utf-8",
			wantBody:   "data: {\"n\":1}\n\ndata: " + internalError + "\n\n",
			wantLog:    "upstream exploded",
		},
		{
			name:       "in the middle of an SSE event",
			handler:    writesThenPanics("text/event-stream", "data: {\"n\":1}\n\ndata: {\"a\":", false, "cut short"),
			wantStatus: 200,
			wantType:   "text/event-stream",
			// The open event is ended first: the error is an event of its own.
			wantBody: "data: {\"n\":1}\n\ndata: {\"a\":\n\ndata: " + internalError + "\n\n",
			wantLog:  "cut short",
		},
		{
			name:        "after a JSON body started",
			handler:     writesThenPanics("application/json", `{"partial":`, false, "half way"),
			wantStatus:  200,
			wantType:    "application/json",
			wantBody:    `{"partial":`,
			wantReadErr: "Handler.Panic",
			wantLog:     "half way",
		},
		{
			name:        "ErrAbortHandler cuts an SSE stream",
			handler:     writesThenPanics("text/event-stream", "data: 1\n\n", false, http.ErrAbortHandler),
			wantStatus:  200,
			wantType:    "text/event-stream",
			wantBody:    "data: 1\n\n",
			wantReadErr: "Handler.Aborted",
			wantLog:     "aborted",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&logs, nil))
			resp, err := lambdahttp.Wrap(tt.handler, lambdahttp.WithLogger(logger))(context.Background(), event("POST", "/x", "", "", nil))
			if err != nil {
				t.Fatalf("Wrap: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			if tt.wantReadErr == "" && err != nil {
				t.Errorf("read: %v", err)
			}
			if tt.wantReadErr != "" {
				var ie messages.InvokeResponse_Error
				if !errors.As(err, &ie) || ie.Type != tt.wantReadErr {
					t.Errorf("read error = %v, want type %s", err, tt.wantReadErr)
				}
			}
			if resp.StatusCode != tt.wantStatus || resp.Headers["Content-Type"] != tt.wantType {
				t.Errorf("status %d, content type %q; want %d, %q", resp.StatusCode, resp.Headers["Content-Type"], tt.wantStatus, tt.wantType)
			}
			if _, leaked := resp.Headers["X-Secret-Upstream"]; leaked {
				t.Error("headers set before the panic leaked into the 500")
			}
			if string(body) != tt.wantBody {
				t.Errorf("body = %q, want %q", body, tt.wantBody)
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("log %q lacks %q", logs.String(), tt.wantLog)
			}
			if strings.Contains(logs.String(), "goroutine ") {
				t.Errorf("log holds a stack dump: %s", logs.String())
			}
		})
	}
}

func TestDeadlineMargin(t *testing.T) {
	deadline := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	tests := []struct {
		name      string
		margin    lambdahttp.Option
		want      time.Time
		wantCause error
	}{
		{"default margin", nil, deadline.Add(-lambdahttp.DefaultDeadlineMargin), nil},
		{"custom margin", lambdahttp.WithDeadlineMargin(5 * time.Second), deadline.Add(-5 * time.Second), nil},
		{"margin beyond the deadline ends the context at once", lambdahttp.WithDeadlineMargin(2 * time.Hour), deadline.Add(-2 * time.Hour), lambdahttp.ErrDeadline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			type seen struct {
				deadline time.Time
				cause    error
			}
			got := make(chan seen, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				d, _ := r.Context().Deadline()
				got <- seen{d, context.Cause(r.Context())}
			})
			opts := []lambdahttp.Option{lambdahttp.WithLogger(quietLogger())}
			if tt.margin != nil {
				opts = append(opts, tt.margin)
			}
			resp, err := lambdahttp.Wrap(h, opts...)(ctx, event("GET", "/", "", "", nil))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			s := <-got
			if !s.deadline.Equal(tt.want) {
				t.Errorf("deadline = %v, want %v", s.deadline, tt.want)
			}
			if s.cause != tt.wantCause {
				t.Errorf("cause = %v, want %v", s.cause, tt.wantCause)
			}
		})
	}
}

// TestResponseGoneCancels shows that when the runtime client closes the
// response stream (the POST to the Runtime API ended early), the handler's
// context is cancelled and its writes fail.
func TestResponseGoneCancels(t *testing.T) {
	type result struct {
		cause    error
		writeErr error
	}
	started := make(chan struct{})
	done := make(chan result, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
		_, err := io.WriteString(w, "data: late\n\n")
		done <- result{context.Cause(r.Context()), err}
	})
	resp, err := lambdahttp.Wrap(h, lambdahttp.WithLogger(quietLogger()))(context.Background(), event("POST", "/", "", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := resp.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case r := <-done:
		if !errors.Is(r.cause, lambdahttp.ErrResponseGone) {
			t.Errorf("cause = %v, want ErrResponseGone", r.cause)
		}
		if !errors.Is(r.writeErr, lambdahttp.ErrResponseGone) {
			t.Errorf("write after close = %v, want ErrResponseGone", r.writeErr)
		}
	case <-time.After(guard):
		t.Fatal("handler context was not cancelled when the response stream closed")
	}
}

func TestHandlerContextEndsWithHandler(t *testing.T) {
	ctxs := make(chan context.Context, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ctxs <- r.Context() })
	resp := invoke(t, h, event("GET", "/", "", "", nil))
	io.Copy(io.Discard, resp.Body)
	ctx := <-ctxs
	select {
	case <-ctx.Done():
	case <-time.After(guard):
		t.Fatal("request context still live after the handler returned")
	}
}
