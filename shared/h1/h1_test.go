package h1_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/h1"
	"github.com/sluice-gw/sluice/shared/h1/h1test"
)

// countingServer is an httptest server that counts the connections it
// accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	s := httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, &conns
}

// fallback records the requests the transport hands over.
type fallback struct {
	mu   sync.Mutex
	urls []string
}

func (f *fallback) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.urls = append(f.urls, r.URL.String())
	f.mu.Unlock()
	return &http.Response{StatusCode: 299, Body: http.NoBody, Request: r}, nil
}

func newTransport() (*h1.Transport, *fallback) {
	f := &fallback{}
	return &h1.Transport{Fallback: f}, f
}

func post(t *testing.T, c *http.Client, ctx context.Context, u, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return c.Do(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

// send posts body to u and reads the answer, failing t on an error.
func send(t *testing.T, c *http.Client, u, body string) string {
	t.Helper()
	resp, err := post(t, c, context.Background(), u, body)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, resp)
}

// wantConns fails t unless the server accepted n connections, as why says.
func wantConns(t *testing.T, conns *atomic.Int64, n int64, why string) {
	t.Helper()
	if got := conns.Load(); got != n {
		t.Errorf("connections = %d, want %d: %s", got, n, why)
	}
}

// wantDials fails t unless tr dialled n connections, as why says.
func wantDials(t *testing.T, tr *h1.Transport, n int64, why string) {
	t.Helper()
	if got := tr.Dials(); got != n {
		t.Errorf("Dials = %d, want %d: %s", got, n, why)
	}
}

func TestRoundTripReusesConnection(t *testing.T) {
	s, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		fmt.Fprintf(w, "echo:%s:%s", r.URL.Path, b)
	})
	tr, fb := newTransport()
	c := &http.Client{Transport: tr}
	for i := range 5 {
		resp, err := post(t, c, context.Background(), s.URL+"/v1/x", fmt.Sprintf(`{"n":%d}`, i))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := readAll(t, resp), fmt.Sprintf(`echo:/v1/x:{"n":%d}`, i); got != want || resp.StatusCode != 200 || resp.Header.Get("X-Method") != "POST" {
			t.Fatalf("response %d: %d %q %v, want 200 %q", i, resp.StatusCode, got, resp.Header, want)
		}
	}
	wantConns(t, conns, 1, "5 sequential requests share one connection (keep-alive)")
	if tr.Dials() != 1 {
		t.Errorf("Dials = %d, want 1", tr.Dials())
	}
	if len(fb.urls) != 0 {
		t.Errorf("fallback got %v", fb.urls)
	}
}

func TestStreamedBodyIncremental(t *testing.T) {
	release := make(chan struct{})
	s, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	tr, _ := newTransport()
	c := &http.Client{Transport: tr}
	resp, err := post(t, c, context.Background(), s.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: 1\n" {
		t.Fatalf("first event before the server finished: %q %v", line, err)
	}
	close(release)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "\ndata: [DONE]\n\n" {
		t.Fatalf("rest %q %v", rest, err)
	}
	resp.Body.Close()
	send(t, c, s.URL, "{}")
	wantConns(t, conns, 1, "a chunked body read to its end leaves the connection")
}

func TestBodyClosedEarlyDropsConnection(t *testing.T) {
	u := serveRequests(t, func(c net.Conn, req *http.Request, _ string) bool {
		if req.URL.Path == "/half" {
			// Half of the body; the rest would follow later. Every
			// byte sent is read by the client, so nothing is left in
			// its buffer: only Close can tell the connection is unfit.
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345")
			return true
		}
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return true
	})
	tr, _ := newTransport()
	c := &http.Client{Transport: tr}
	resp, err := post(t, c, context.Background(), u+"/half", "{}")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "12345" {
		t.Fatalf("first half %q %v", buf, err)
	}
	resp.Body.Close() // before the end of the body
	if got := send(t, c, u, "{}"); got != "ok" {
		t.Fatalf("second response %q", got)
	}
	wantDials(t, tr, 2, "a body closed before its end must not leave its connection for the next request")
}

func TestContextEndsWait(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	u := h1test.Server(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if _, _, err := readRequest(br); err != nil {
			return
		}
		if n == 1 { // the second connection: half a stream, then silence
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		}
		<-hold
	})
	tr, _ := newTransport()
	c := &http.Client{Transport: tr}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := post(t, c, ctx, u, "{}")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting for headers: err = %v, want context.Canceled", err)
	}

	ctx, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	resp, err := post(t, c, ctx, u, "{}")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("first chunk %q %v", buf, err)
	}
	_, err = resp.Body.Read(buf)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("reading a stalled body: err = %v, want context.DeadlineExceeded", err)
	}
	resp.Body.Close()
	if tr.Dials() != 2 {
		t.Errorf("Dials = %d, want 2", tr.Dials())
	}
}

func TestFallback(t *testing.T) {
	proxy, _ := url.Parse("http://proxy.invalid:3128")
	tr, fb := newTransport()
	tr.Proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == "via-proxy.invalid" {
			return proxy, nil
		}
		return nil, nil
	}
	c := &http.Client{Transport: tr}
	for _, u := range []string{"https://api.invalid/v1", "http://via-proxy.invalid/v1"} {
		resp, err := post(t, c, context.Background(), u, "{}")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 299 {
			t.Errorf("%s: status %d, want the fallback's 299", u, resp.StatusCode)
		}
	}
	if want := []string{"https://api.invalid/v1", "http://via-proxy.invalid/v1"}; fmt.Sprint(fb.urls) != fmt.Sprint(want) {
		t.Errorf("fallback got %v, want %v", fb.urls, want)
	}
	if tr.Dials() != 0 {
		t.Errorf("Dials = %d, want 0", tr.Dials())
	}
}

func TestGotConnTrace(t *testing.T) {
	s, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	tr, _ := newTransport()
	c := &http.Client{Transport: tr}
	var infos []httptrace.GotConnInfo
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { infos = append(infos, i) }})
	for range 2 {
		resp, err := post(t, c, ctx, s.URL, "{}")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if len(infos) != 2 {
		t.Fatalf("GotConn called %d times, want 2", len(infos))
	}
	if _, ok := infos[0].Conn.(*net.TCPConn); !ok || infos[0].Reused {
		t.Errorf("first: %T reused=%v, want a new *net.TCPConn", infos[0].Conn, infos[0].Reused)
	}
	if !infos[1].Reused || !infos[1].WasIdle || infos[1].Conn != infos[0].Conn {
		t.Errorf("second: %+v, want the first connection, reused", infos[1])
	}
}

func TestIdleTimeout(t *testing.T) {
	s, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	tr, _ := newTransport()
	tr.IdleTimeout = time.Nanosecond
	c := &http.Client{Transport: tr}
	for range 3 {
		send(t, c, s.URL, "{}")
	}
	wantConns(t, conns, 3, "connections idle past IdleTimeout are closed, not reused")
}

func TestConcurrent(t *testing.T) {
	s, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %s-%d\n\n", b, i)
			w.(http.Flusher).Flush()
		}
	})
	tr, _ := newTransport()
	tr.MaxIdlePerHost = 8
	c := &http.Client{Transport: tr}
	const workers, each = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				resp, err := post(t, c, context.Background(), s.URL, id)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := fmt.Sprintf("data: %s-0\n\ndata: %s-1\n\ndata: %s-2\n\n", id, id, id)
				if err != nil || string(b) != want {
					errs <- fmt.Errorf("%s: %q %v", id, b, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := conns.Load(); n > workers+8 || n < 1 {
		t.Errorf("connections = %d for %d workers, want at most %d", n, workers, workers+8)
	}
}

func TestLargeRequestBody(t *testing.T) {
	s, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d %x", len(b), b[len(b)-4:])
	})
	tr, _ := newTransport()
	body := bytes.Repeat([]byte("0123456789abcdef"), 10_000) // 160 KB, five times the buffer
	req, _ := http.NewRequest(http.MethodPost, s.URL, bytes.NewReader(body))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readAll(t, resp), fmt.Sprintf("%d %x", len(body), body[len(body)-4:]); got != want {
		t.Errorf("server got %q, want %q", got, want)
	}
}

// TestAnswerBeforeBody: a server that refuses a body too large answers
// before it reads it, and closes; the client gets that answer, not a
// failure to write.
func TestAnswerBeforeBody(t *testing.T) {
	u := h1test.Server(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil { // the head only
			return
		}
		fmt.Fprint(c, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: 8\r\n\r\ntoo big\n")
		time.Sleep(50 * time.Millisecond) // the answer reaches the client before the reset
	})
	tr, _ := newTransport()
	body := bytes.Repeat([]byte("x"), 16<<20) // more than the socket buffers hold
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("err = %v, want the server's 413", err)
	}
	if got := readAll(t, resp); resp.StatusCode != 413 || got != "too big\n" {
		t.Fatalf("%d %q, want 413 %q", resp.StatusCode, got, "too big\n")
	}
}
