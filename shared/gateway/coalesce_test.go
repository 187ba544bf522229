package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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

// A burst the upstream sent at once is forwarded with a few flushes, not
// one per read of it, and arrives whole and in order.
func TestStreamCoalescesBurst(t *testing.T) {
	if !pendingSupported {
		t.Skip("no pending-bytes probe on this system")
	}
	pad := strings.Repeat("x", 500)
	var burst strings.Builder
	burst.WriteString(roleChunk)
	const n = 60 // ~36 KB: more than the transport's and the reader's buffers
	for i := range n {
		burst.WriteString(chunk(fmt.Sprintf("%d-%s", i, pad)))
	}
	burst.WriteString("data: [DONE]\n\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", fmt.Sprint(burst.Len()))
		_, _ = io.WriteString(w, burst.String()) // one write: all of it is in the kernel at once
	}))
	defer up.Close()
	f := newFixture(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s}\n", up.URL), nil)
	var flushes atomic.Int32
	h := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(flushCounter{w, &flushes}, r)
	})
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`)
	body := readAll(t, resp.Body)
	if body != burst.String() {
		t.Fatalf("the client got %d bytes, not the upstream's %d as sent", len(body), burst.Len())
	}
	// Reads of 4-8 KB each flushed one by one would be 5 or more flushes;
	// held while more was waiting, one at the 32 KB bound (and perhaps one
	// at a read that found the kernel momentarily empty).
	if got := flushes.Load(); got > 2 {
		t.Errorf("%d flushes for a burst that was all waiting; want at most 2", got)
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
	if rest := readAll(t, rd); rest != second+"data: [DONE]\n\n" {
		t.Fatalf("rest = %q", rest)
	}
}
