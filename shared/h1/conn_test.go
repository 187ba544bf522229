package h1_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/h1/h1test"
)

// serveRequests serves the requests of every connection in turn with
// answer, until answer says the connection is done or the client ends it.
func serveRequests(t *testing.T, answer func(c net.Conn, req *http.Request, body string) (more bool)) string {
	return h1test.Server(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, body, err := readRequest(br)
			if err != nil || !answer(c, req, body) {
				return
			}
		}
	})
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
	return h1test.Server(t, func(n int, c net.Conn) {
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
	send(t, c, u, "first")
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
			u := serveRequests(t, func(c net.Conn, _ *http.Request, body string) bool {
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				time.Sleep(5 * time.Millisecond) // the response is read
				c.Write([]byte(tt.after))
				if tt.close {
					c.(*net.TCPConn).CloseWrite()
				}
				sent <- struct{}{}
				return true
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
	u := serveRequests(t, func(c net.Conn, req *http.Request, _ string) bool {
		switch req.URL.Path {
		case "/close":
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nclose")
			return false
		case "/eof": // neither a length nor chunks: the body ends with the connection
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\n\r\nuntil the end")
			return false
		case "/http10":
			fmt.Fprint(c, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n10")
		case "/early":
			fmt.Fprint(c, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal")
		case "/empty":
			fmt.Fprint(c, "HTTP/1.1 204 No Content\r\n\r\n")
		}
		return true
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
	u := serveRequests(t, func(c net.Conn, _ *http.Request, _ string) bool {
		// One response and the start of another nobody asked for.
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n")
		return true
	})
	tr, _ := newTransport()
	c := &http.Client{Transport: tr}
	for range 2 {
		if got := send(t, c, u, "{}"); got != "ok" {
			t.Fatalf("body %q", got)
		}
	}
	wantDials(t, tr, 2, "a connection with unread bytes after the response is not reused")
}

func TestHeaderLimit(t *testing.T) {
	u := h1test.Server(t, func(n int, c net.Conn) {
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
