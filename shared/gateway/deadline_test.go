package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// expiring is a request context whose deadline passes when the test says
// so: in Lambda the request context ends a margin before the invocation's
// deadline, so that the handler can still tell the client why it stops.
type expiring struct {
	context.Context
	once sync.Once
	done chan struct{}
}

func (c *expiring) Done() <-chan struct{} { return c.done }
func (c *expiring) expire()               { c.once.Do(func() { close(c.done) }) }
func (c *expiring) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A stream whose request reaches its deadline after content was sent ends
// with an OpenAI-style error event, not silently: a deadline is not the
// client going away, and a client would take the cut answer for a whole one.
func TestStreamDeadlineAfterContent(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk("Hello"))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // then nothing more
	}))
	defer up.Close()
	h := testHandler(Options{Config: loadConfig(t, fmt.Sprintf("model_list:\n  - model_name: slow\n    litellm_params: {model: openai/slow, api_base: %s/v1, api_key: k}\n", up.URL))})
	ctx := &expiring{Context: context.Background(), done: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer srv.Close()
	defer ctx.expire()

	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"slow","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.Contains(first, `"content":"Hello"`) {
		t.Fatalf("first line %q (%v), want the content chunk", first, err)
	}
	ctx.expire() // the deadline passes while the upstream is silent
	rest := readAllBounded(t, br, 10*time.Second)
	if !strings.Contains(rest, `data: {"error":`) || !strings.Contains(rest, "time limit") {
		t.Fatalf("after the deadline the stream ended with %q, want an error event saying the time ran out", rest)
	}
}

// readAllBounded reads r to its end; the bound only stops a hang.
func readAllBounded(t *testing.T, r io.Reader, bound time.Duration) string {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() { b, err := io.ReadAll(r); ch <- result{b, err} }()
	select {
	case res := <-ch:
		if res.err != nil {
			t.Fatalf("read: %v", res.err)
		}
		return string(res.b)
	case <-time.After(bound): // a bound on a hang, not a timing assertion
		t.Fatal("the stream did not end after the deadline")
		return ""
	}
}
