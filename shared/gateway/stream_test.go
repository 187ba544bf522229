package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/h1/h1test"
)

// sseUpstream streams the given events; before each event after the first it
// waits for a signal on next, so the test controls the pace.
func sseUpstream(t *testing.T, events []string, next <-chan struct{}, cut bool, gotBody *[]byte) *httptest.Server {
	return gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
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
	})
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
	if ev := readEvent(t, rd); ev != roleChunk {
		t.Fatalf("first event = %q", ev)
	}
	if ev := readEvent(t, rd); ev != chunk("Hel") {
		t.Fatalf("second event = %q", ev)
	}
	next <- struct{}{} // only now does the upstream send "lo"
	if ev := readEvent(t, rd); ev != chunk("lo") {
		t.Fatalf("third event = %q", ev)
	}
	next <- struct{}{}
	if ev := readEvent(t, rd); ev != "data: [DONE]\n\n" {
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
			out := gatewaytest.ReadAll(t, f.post(t, "/v1/chat/completions", "", body).Body)
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
	out := gatewaytest.ReadAll(t, resp.Body)
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

// stalling is an upstream that streams one chunk of content, then waits
// for its request to be cancelled (and closes cancelled, if set) or for the
// test to end.
func stalling(t *testing.T, content string, cancelled chan<- struct{}) *httptest.Server {
	ended := make(chan struct{})
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk(content))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			if cancelled != nil {
				close(cancelled)
			}
		case <-ended:
		}
	})
	t.Cleanup(func() { close(ended) }) // first: Close waits for the handler
	return up
}

// leaveMidStream posts a streamed request, reads the first line of its
// answer, and goes away.
func (f *fixture) leaveMidStream(t *testing.T, body string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(resp.Body).ReadString('\n'); !strings.HasPrefix(line, "data:") {
		t.Fatalf("first line %q", line)
	}
	cancel()
	resp.Body.Close()
	return resp
}

// A client that goes away cancels the upstream request.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	cancelled := make(chan struct{})
	up := stalling(t, "a", cancelled)
	f := newFixture(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s}\n", up.URL), nil)
	f.leaveMidStream(t, `{"model":"m","stream":true}`)
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second): // a bound on a hang, not a timing assertion
		t.Fatal("upstream request was not cancelled after the client went away")
	}
}

// TestUpstreamHeadersOnStreams: the provider's request id and rate-limit
// headers reach the client as llm_provider-* on streams too, as on unary
// responses.
func TestUpstreamHeadersOnStreams(t *testing.T) {
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req_123")
		w.Header().Set("X-Ratelimit-Remaining-Requests", "99")
		w.Header().Set("Openai-Processing-Ms", "7")
		w.Header().Set("X-Other", "not copied")
		if strings.Contains(gatewaytest.ReadAll(t, r.Body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, roleChunk+chunk("hi")+"data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, completion)
	})
	f := keyedFixture(t, fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/gpt-4o, api_base: %q, api_key: sk-up}
general_settings: {master_key: sk-master}
`, up.URL+"/v1"))
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			resp := f.post(t, "/v1/chat/completions", "sk-master", fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":%v}`, stream))
			out := gatewaytest.ReadAll(t, resp.Body)
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
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk("Hello"))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // then nothing more
	})
	h := testHandler(Options{Config: loadConfig(t, fmt.Sprintf("model_list:\n  - model_name: slow\n    litellm_params: {model: openai/slow, api_base: %s/v1, api_key: k}\n", up.URL))})
	ctx := &expiring{Context: context.Background(), done: make(chan struct{})}
	srv := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(ctx))
	})
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

// readEvent reads one server-sent event, its blank line included.
func readEvent(t *testing.T, rd *bufio.Reader) string {
	t.Helper()
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

// flushCounter counts the flushes the gateway asks for.
type flushCounter struct {
	http.ResponseWriter
	n *atomic.Int32
}

func (f flushCounter) Flush() {
	f.n.Add(1)
	f.ResponseWriter.(http.Flusher).Flush()
}

// rawUpstream answers every request on a connection with resp, written
// in one system call, so that all of it reaches the gateway's kernel at
// once.
func rawUpstream(t *testing.T, resp string) string {
	t.Helper()
	return h1test.Server(t, func(_ int, c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, resp); err != nil {
				return
			}
		}
	})
}

// A burst that arrived at once is forwarded without a flush before its
// end (read whole, or held while more of it waits in the kernel), and
// arrives whole and in order.
func TestStreamCoalescesBurst(t *testing.T) {
	if !pendingSupported {
		t.Skip("no pending-bytes probe on this system")
	}
	defer func(d time.Duration) { coalesceMaxDelay = d }(coalesceMaxDelay)
	coalesceMaxDelay = time.Hour // only the bytes waiting decide, however slow the machine
	pad := strings.Repeat("x", 300)
	var burst strings.Builder
	burst.WriteString(roleChunk)
	for i := range 24 { // ~10 KB: one write, within a fresh socket's send buffer
		burst.WriteString(chunk(fmt.Sprintf("%d-%s", i, pad)))
	}
	burst.WriteString("data: [DONE]\n\n")
	up := rawUpstream(t, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", burst.Len(), burst.String()))
	f := newFixture(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s}\n", up), nil)
	var flushes atomic.Int32
	h := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(flushCounter{w, &flushes}, r)
	})
	for range 3 { // a new upstream connection, then reused ones
		resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`)
		if body := gatewaytest.ReadAll(t, resp.Body); body != burst.String() {
			t.Fatalf("the client got %d bytes, not the upstream's %d as sent", len(body), burst.Len())
		}
	}
	// Flushed before every read, each stream would be flushed at least
	// twice; the end of the response is written by net/http, not counted.
	if got := flushes.Load(); got != 0 {
		t.Errorf("%d flushes for bursts that were all waiting; want none before the end", got)
	}
}

// The policy itself, on a real socket whose waiting bytes the test sets.
func TestCoalescerPolicy(t *testing.T) {
	if !pendingSupported {
		t.Skip("no pending-bytes probe on this system")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); accepted <- c }()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := <-accepted
	defer server.Close()
	rc, _ := client.(*net.TCPConn).SyscallConn()

	var flushes atomic.Int32
	w := flushCounter{httptest.NewRecorder(), &flushes}
	c := &coalescer{w: w, conn: rc}
	c.ctl = c.control
	waitPending := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; {
			if c.conn.Control(c.ctl); c.pending == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pending = %d, want %d", c.pending, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	step := func(name string, want int32) {
		t.Helper()
		if got := flushes.Load(); got != want {
			t.Fatalf("%s: %d flushes, want %d", name, got, want)
		}
	}

	c.beforeRead()
	step("nothing written", 0)
	c.wrote(100)
	c.beforeRead()
	step("written, nothing waiting", 1)

	if _, err := server.Write(make([]byte, 500)); err != nil {
		t.Fatal(err)
	}
	waitPending(500)
	c.wrote(100)
	c.beforeRead()
	step("written, more waiting", 1)
	c.since = time.Now().Add(-2 * coalesceMaxDelay)
	c.beforeRead()
	step("held past the delay bound", 2)
	c.wrote(coalesceMaxBytes)
	step("past the byte bound", 3)
	_, _ = io.ReadFull(client, make([]byte, 500))
	c.wrote(10)
	c.beforeRead()
	step("the waiting bytes read", 4)

	c = &coalescer{w: w} // an upstream that cannot be asked
	c.wrote(10)
	c.beforeRead()
	step("no connection", 5)

	// Only plain TCP is asked: over TLS the waiting bytes may be part of a
	// record, and the read would wait for the rest with the events held.
	c = &coalescer{w: w}
	c.gotConn(httptrace.GotConnInfo{Conn: tls.Client(client, &tls.Config{})})
	if c.conn != nil {
		t.Error("a TLS connection is asked for its waiting bytes")
	}
	c.gotConn(httptrace.GotConnInfo{Conn: client})
	if c.conn == nil {
		t.Error("a plain TCP connection is not asked for its waiting bytes")
	}
}

// When the upstream pauses inside an event, what was written before is
// flushed first: the client never waits for bytes the gateway holds.
func TestStreamFlushesBeforeWaitingMidEvent(t *testing.T) {
	next := make(chan struct{})
	second := chunk("lo")
	half := len(second) / 2
	up := sseUpstream(t, []string{roleChunk + chunk("Hel") + second[:half], second[half:], "data: [DONE]\n\n"}, next, false, nil)
	defer up.Close()
	f := newFixture(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s}\n", up.URL), nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","stream":true,"messages":[]}`)
	rd := bufio.NewReader(resp.Body)
	for _, want := range []string{roleChunk, chunk("Hel")} {
		if ev := readEvent(t, rd); ev != want {
			t.Fatalf("event %q, want %q", ev, want)
		}
	}
	close(next) // only now does the upstream finish the second event
	if rest := gatewaytest.ReadAll(t, rd); rest != second+"data: [DONE]\n\n" {
		t.Fatalf("rest = %q", rest)
	}
}
