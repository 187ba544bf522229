// Package gatewaytest is the HTTP plumbing the gateway's and the app's tests
// share: fake upstreams served until the test ends, one request through a
// handler, a body read whole, a logger that drops everything.
package gatewaytest

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Upstream serves fn over HTTP until the test ends.
func Upstream(t testing.TB, fn http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(fn)
	t.Cleanup(srv.Close)
	return srv
}

// Counter is an upstream that answers a fixed body and counts its calls.
type Counter struct {
	*httptest.Server
	Calls atomic.Int64
}

// Answering is an upstream that reads each request whole and answers status
// with body, as contentType when that is set.
func Answering(t testing.TB, status int, contentType, body string) *Counter {
	t.Helper()
	u := &Counter{}
	u.Server = Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		u.Calls.Add(1)
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
	return u
}

// Quiet is a logger that drops everything.
func Quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Request is a request for path with body and, when key is set, the key as
// a bearer token, to serve with Do.
func Request(method, path, key, body string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req
}

// Do serves req on h, with no network, and returns what h answered.
func Do(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Logs collects what a logger writes, safe for concurrent writes.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger logs JSON lines at debug level into l.
func (l *Logs) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Decode reads the JSON r holds into v, failing the test when it cannot.
func Decode(t testing.TB, r io.Reader, v any) {
	t.Helper()
	if err := json.NewDecoder(r).Decode(v); err != nil {
		t.Fatalf("decode JSON: %v", err)
	}
}

// ReadAll reads r to its end, failing the test on an error.
func ReadAll(t testing.TB, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}
