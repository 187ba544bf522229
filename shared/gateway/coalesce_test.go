package gateway

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/h1/h1test"
)

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
		var ev strings.Builder
		for !strings.HasSuffix(ev.String(), "\n\n") {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			ev.WriteString(line)
		}
		if ev.String() != want {
			t.Fatalf("event %q, want %q", ev.String(), want)
		}
	}
	close(next) // only now does the upstream finish the second event
	if rest := gatewaytest.ReadAll(t, rd); rest != second+"data: [DONE]\n\n" {
		t.Fatalf("rest = %q", rest)
	}
}
