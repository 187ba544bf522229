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
	if n := conns.Load(); n != 1 {
		t.Errorf("server saw %d connections for 5 sequential requests, want 1 (keep-alive)", n)
	}
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
	resp2, err := post(t, c, context.Background(), s.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp2)
	if n := conns.Load(); n != 1 {
		t.Errorf("connections = %d, want 1: a chunked body read to its end leaves the connection", n)
	}
}

func TestBodyClosedEarlyDropsConnection(t *testing.T) {
	u := rawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, _, err := readRequest(br)
			if err != nil {
				return
			}
			if req.URL.Path == "/half" {
				// Half of the body; the rest would follow later. Every
				// byte sent is read by the client, so nothing is left in
				// its buffer: only Close can tell the connection is unfit.
				fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345")
				continue
			}
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
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
	resp, err = post(t, c, context.Background(), u, "{}")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "ok" {
		t.Fatalf("second response %q", got)
	}
	if tr.Dials() != 2 {
		t.Errorf("Dials = %d, want 2: a body closed before its end must not leave its connection for the next request", tr.Dials())
	}
}

// rawServer accepts connections and hands each to serve.
func rawServer(t *testing.T, serve func(n int, c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(n, c)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// readRequest reads one request and its body from br.
func readRequest(br *bufio.Reader) (*http.Request, string, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(req.Body)
	return req, string(b), err
}

// dropSecond answers the first request on each connection and closes the
// connection on reading the second one: a server that gave up on an idle
// connection while the request was on its way, which a look at the idle
// connection cannot foresee.
func dropSecond(t *testing.T) string {
	return rawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		_, body, err := readRequest(br)
		if err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		readRequest(br) // and close without an answer
	})
}

func TestStaleIdleConnectionRetried(t *testing.T) {
	u := dropSecond(t)
	tr, _ := newTransport()
	c := &http.Client{Transport: tr}
	for i := range 3 {
		resp, err := post(t, c, context.Background(), u, fmt.Sprintf("body-%d", i))
		if err != nil {
			t.Fatalf("request %d: %v (a request the server dropped unanswered on a reused connection is sent again)", i, err)
		}
		if got := readAll(t, resp); got != fmt.Sprintf("body-%d", i) {
			t.Fatalf("request %d answered %q", i, got)
		}
	}
	if tr.Dials() != 3 {
		t.Errorf("Dials = %d, want 3", tr.Dials())
	}
}

func TestStaleConnectionNotRetriedWithoutGetBody(t *testing.T) {
	u := dropSecond(t)
	tr, _ := newTransport()
	c := &http.Client{Transport: tr}
	resp, err := post(t, c, context.Background(), u, "first")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	req, _ := http.NewRequest(http.MethodPost, u, io.NopCloser(strings.NewReader("once")))
	req.ContentLength = 4
	if _, err := c.Do(req); err == nil {
		t.Fatal("a body that cannot be rewound was sent again on a new connection")
	}
	if tr.Dials() != 1 {
		t.Errorf("Dials = %d, want 1", tr.Dials())
	}
}

// TestIdleConnectionChecked: what arrives on an idle connection (an end of
// stream, a 408 some servers send before closing one, stray bytes) makes it
// unfit; the next request goes on a new connection and gets its own answer.
func TestIdleConnectionChecked(t *testing.T) {
	for _, tt := range []struct {
		name, after string
		close       bool
	}{
		{"closed", "", true},
		{"408", "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", true},
		{"stray bytes", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sent := make(chan struct{}, 4)
			u := rawServer(t, func(n int, c net.Conn) {
				br := bufio.NewReader(c)
				for {
					_, body, err := readRequest(br)
					if err != nil {
						return
					}
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
					time.Sleep(5 * time.Millisecond) // the response is read
					c.Write([]byte(tt.after))
					if tt.close {
						c.(*net.TCPConn).CloseWrite()
					}
					sent <- struct{}{}
				}
			})
			tr, _ := newTransport()
			c := &http.Client{Transport: tr}
			for i := range 2 {
				req, _ := http.NewRequest(http.MethodPost, u, io.NopCloser(strings.NewReader(fmt.Sprint("req-", i))))
				req.ContentLength = 5 // no GetBody: a resend could not hide a bad pick
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if got := readAll(t, resp); resp.StatusCode != 200 || got != fmt.Sprint("req-", i) {
					t.Fatalf("request %d: %d %q, want its own answer", i, resp.StatusCode, got)
				}
				<-sent
				time.Sleep(20 * time.Millisecond) // what the server sent after it arrives
			}
			if tr.Dials() != 2 {
				t.Errorf("Dials = %d, want 2", tr.Dials())
			}
		})
	}
}

func TestConnectionCloseAndReadToEOF(t *testing.T) {
	u := rawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, _, err := readRequest(br)
			if err != nil {
				return
			}
			switch req.URL.Path {
			case "/close":
				fmt.Fprint(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nclose")
				return
			case "/eof": // neither a length nor chunks: the body ends with the connection
				fmt.Fprint(c, "HTTP/1.1 200 OK\r\n\r\nuntil the end")
				return
			case "/http10":
				fmt.Fprint(c, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n10")
			case "/early":
				fmt.Fprint(c, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal")
			case "/empty":
				fmt.Fprint(c, "HTTP/1.1 204 No Content\r\n\r\n")
			}
		}
	})
	tr, _ := newTransport()
	c := &http.Client{Transport: tr}
	for _, tt := range []struct {
		path, want string
		dials      int64 // after the request
	}{
		{"/close", "close", 1},
		{"/eof", "until the end", 2},
		{"/http10", "10", 3},
		{"/empty", "", 4},      // the HTTP/1.0 answer closed its connection
		{"/early", "final", 4}, // after the 204, the connection was kept
		{"/empty", "", 4},
	} {
		resp, err := post(t, c, context.Background(), u+tt.path, "{}")
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if got := readAll(t, resp); got != tt.want {
			t.Errorf("%s: body %q, want %q", tt.path, got, tt.want)
		}
		if tr.Dials() != tt.dials {
			t.Errorf("%s: Dials = %d, want %d", tt.path, tr.Dials(), tt.dials)
		}
	}
}

func TestLeftoverBytesDropConnection(t *testing.T) {
	u := rawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, _, err := readRequest(br); err != nil {
				return
			}
			// One response and the start of another nobody asked for.
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n")
		}
	})
	tr, _ := newTransport()
	c := &http.Client{Transport: tr}
	for range 2 {
		resp, err := post(t, c, context.Background(), u, "{}")
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "ok" {
			t.Fatalf("body %q", got)
		}
	}
	if tr.Dials() != 2 {
		t.Errorf("Dials = %d, want 2: a connection with unread bytes after the response is not reused", tr.Dials())
	}
}

func TestHeaderLimit(t *testing.T) {
	u := rawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if _, _, err := readRequest(br); err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nX-Big: %s\r\nContent-Length: 0\r\n\r\n", strings.Repeat("a", 4000))
	})
	tr, _ := newTransport()
	tr.MaxResponseHeaderBytes = 1000
	_, err := post(t, &http.Client{Transport: tr}, context.Background(), u, "{}")
	if err == nil || !strings.Contains(err.Error(), "headers above 1000 bytes") {
		t.Fatalf("err = %v, want the header bound", err)
	}
	tr.MaxResponseHeaderBytes = 8000
	resp, err := post(t, &http.Client{Transport: tr}, context.Background(), u, "{}")
	if err != nil {
		t.Fatalf("within the bound: %v", err)
	}
	resp.Body.Close()
}

func TestContextEndsWait(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	u := rawServer(t, func(n int, c net.Conn) {
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
		resp, err := post(t, c, context.Background(), s.URL, "{}")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("connections = %d, want 3: connections idle past IdleTimeout are closed, not reused", n)
	}
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
	u := rawServer(t, func(n int, c net.Conn) {
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
