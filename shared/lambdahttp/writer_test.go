package lambdahttp_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The response writer (writer.go): headers, flushes, held writes.

func TestResponseHeaders(t *testing.T) {
	tests := []struct {
		name        string
		handler     http.HandlerFunc
		wantStatus  int
		wantHeaders map[string]string
		wantCookies []string
		wantBody    string
	}{
		{
			name: "status, joined headers and cookies, no framing headers",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Add("X-Many", "a")
				w.Header().Add("X-Many", "b")
				w.Header().Add("Set-Cookie", "s=1")
				w.Header().Add("Set-Cookie", "t=2")
				w.Header().Set("Content-Length", "2")
				w.Header().Set("Connection", "keep-alive")
				w.WriteHeader(http.StatusCreated)
				w.Header().Set("X-Late", "ignored")
				io.WriteString(w, `{}`)
			},
			wantStatus:  201,
			wantHeaders: map[string]string{"Content-Type": "application/json", "X-Many": "a,b"},
			wantCookies: []string{"s=1", "t=2"},
			wantBody:    `{}`,
		},
		{
			name:        "write without header sniffs content type",
			handler:     func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html><body>hi</body></html>") },
			wantStatus:  200,
			wantHeaders: map[string]string{"Content-Type": "text/html; charset=utf-8"},
			wantBody:    "<html><body>hi</body></html>",
		},
		{
			name:        "handler writes nothing",
			handler:     func(w http.ResponseWriter, r *http.Request) {},
			wantStatus:  200,
			wantHeaders: map[string]string{},
		},
		{
			name: "informational status is skipped",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusEarlyHints)
				w.WriteHeader(http.StatusAccepted)
			},
			wantStatus:  202,
			wantHeaders: map[string]string{},
		},
		{
			name: "no body for 204",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNoContent)
				if _, err := io.WriteString(w, "x"); !errors.Is(err, http.ErrBodyNotAllowed) {
					t.Errorf("write after 204: %v", err)
				}
			},
			wantStatus:  204,
			wantHeaders: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := invoke(t, tt.handler, event("GET", "/", "", "", nil))
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("read body: %v", err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if len(resp.Headers) != len(tt.wantHeaders) {
				t.Errorf("headers = %v, want %v", resp.Headers, tt.wantHeaders)
			}
			for k, v := range tt.wantHeaders {
				if resp.Headers[k] != v {
					t.Errorf("header %s = %q, want %q", k, resp.Headers[k], v)
				}
			}
			if strings.Join(resp.Cookies, ";") != strings.Join(tt.wantCookies, ";") {
				t.Errorf("cookies = %v, want %v", resp.Cookies, tt.wantCookies)
			}
			if string(body) != tt.wantBody {
				t.Errorf("body = %q, want %q", body, tt.wantBody)
			}
		})
	}
}

// TestFlushStreams shows that a flushed event can be read from the response
// stream while the handler still waits for the next one.
func TestFlushStreams(t *testing.T) {
	next := make(chan string)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f, ok := w.(http.Flusher)
		if !ok {
			t.Error("ResponseWriter is not an http.Flusher")
			return
		}
		f.Flush()
		for ev := range next {
			io.WriteString(w, "data: "+ev+"\n\n")
			f.Flush()
		}
	})
	resp := invoke(t, h, event("POST", "/v1/chat/completions", "", "{}", nil))
	if resp.StatusCode != 200 || resp.Headers["Content-Type"] != "text/event-stream" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Headers)
	}
	br := bufio.NewReader(resp.Body)
	for _, ev := range []string{"one", "two", "[DONE]"} {
		next <- ev
		got, err := readEvent(br)
		if err != nil || got != "data: "+ev+"\n\n" {
			t.Fatalf("event = %q, %v; want %q", got, err, ev)
		}
	}
	close(next)
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after last event: %q, %v", rest, err)
	}
}

func readEvent(br *bufio.Reader) (string, error) {
	var sb strings.Builder
	for {
		line, err := br.ReadString('\n')
		sb.WriteString(line)
		if err != nil {
			return sb.String(), err
		}
		if line == "\n" {
			return sb.String(), nil
		}
	}
}

// TestWritesHeldUntilFlush: body writes reach the runtime client at a flush
// (or when the handler returns), in one piece: each pass through the pipe
// is a chunk and a write system call there.
func TestWritesHeldUntilFlush(t *testing.T) {
	proceed := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		for _, ev := range []string{"one", "two", "three"} {
			io.WriteString(w, "data: "+ev+"\n\n")
		}
		w.(http.Flusher).Flush()
		<-proceed
		io.WriteString(w, "data: [DONE]\n\n") // sent when the handler returns
	})
	resp := invoke(t, h, event("POST", "/v1/chat/completions", "", "{}", nil))
	buf := make([]byte, 1<<10)
	n, err := resp.Body.Read(buf)
	if want := "data: one\n\ndata: two\n\ndata: three\n\n"; err != nil || string(buf[:n]) != want {
		t.Fatalf("first read = %q, %v; want the three events written before the flush, at once: %q", buf[:n], err, want)
	}
	close(proceed)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "data: [DONE]\n\n" {
		t.Fatalf("rest = %q, %v", rest, err)
	}
}

// TestLargeWritesNotHeld: a handler that never flushes still streams once
// it has written more than the buffer holds: its writes return (the pipe is
// synchronous: the runtime client took the bytes) before it returns.
func TestLargeWritesNotHeld(t *testing.T) {
	const pieces, size = 256, 1000
	wrote := make(chan struct{})
	proceed := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		piece := bytes.Repeat([]byte("x"), size)
		for range pieces {
			w.Write(piece)
		}
		close(wrote)
		<-proceed
	})
	resp := invoke(t, h, event("GET", "/", "", "", nil))
	var got atomic.Int64
	read := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := resp.Body.Read(buf)
			got.Add(int64(n))
			if err != nil {
				read <- err
				return
			}
		}
	}()
	select {
	case <-wrote:
	case <-time.After(guard):
		t.Fatalf("the handler's writes did not return (%d bytes read)", got.Load())
	}
	// Before the handler returns, all but a buffer's worth has arrived.
	for deadline := time.Now().Add(guard); got.Load() < pieces*size-32<<10; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d bytes arrived before the handler returned: a handler that never flushes is held whole", got.Load(), pieces*size)
		}
	}
	close(proceed)
	if err := <-read; err != io.EOF {
		t.Fatalf("read: %v", err)
	}
	if got.Load() != pieces*size {
		t.Fatalf("body %d bytes, want %d", got.Load(), pieces*size)
	}
}

// A HEAD request gets the status and headers a GET would, and no body, as
// net/http's server gives it.
func TestHeadHasNoBody(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if n, err := io.WriteString(w, `{"object":"list","data":[]}`); err != nil || n != 27 {
			t.Errorf("write on HEAD: %d, %v; want it taken whole, as net/http does", n, err)
		}
	})
	for _, method := range []string{"HEAD", "GET"} {
		resp := invoke(t, h, event(method, "/v1/models", "", "", nil))
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || resp.Headers["Content-Type"] != "application/json" {
			t.Fatalf("%s: %d %v %v", method, resp.StatusCode, resp.Headers, err)
		}
		if want := map[string]int{"HEAD": 0, "GET": 27}[method]; len(body) != want {
			t.Errorf("%s: body %q, want %d bytes", method, body, want)
		}
	}
}
