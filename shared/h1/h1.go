// Package h1 is an HTTP/1.1 client transport for plain-TCP upstreams: a
// self-hosted model server in the same network (vLLM, Ollama, TGI), or any
// OpenAI-compatible server behind an http:// api_base.
//
// net/http's Transport runs two goroutines per connection: one writes each
// request, one reads each response and keeps a read pending on the idle
// connection, and every exchange hands off between them and the caller.
// Profiled under load, those hand-offs were about a sixth of the gateway's
// CPU per streamed request. This transport writes the request and reads the
// response on the caller's goroutine; an idle connection has nothing
// pending on it. It serves only what it can serve that way: http:// URLs
// reached without a proxy. Everything else (https, where the shared
// Transport negotiates HTTP/2; a proxy from the environment) goes to
// Fallback.
//
// Semantics follow net/http's Transport where the gateway relies on them:
//
//   - Connections are kept alive and reused, most recently used first, up
//     to MaxIdlePerHost per address, and dropped after IdleTimeout.
//   - A request that fails on a reused connection before any byte of the
//     response arrived (the server had closed it while idle) is sent again
//     once on a new connection, if its body can be rewound (GetBody).
//   - The request's context bounds the dial, the write, the wait for the
//     response and every read of its body; once it is done they fail with
//     its error (context.Canceled or context.DeadlineExceeded).
//   - 1xx informational responses are skipped; response headers are
//     bounded (MaxResponseHeaderBytes).
//   - httptrace's GotConn is called with the connection (the gateway looks
//     at the TCP connection to decide when to flush a stream).
//
// Not done here: compression (no Accept-Encoding is sent, so servers answer
// uncompressed), redirects (the http.Client's business), HTTP/2, trailers
// beyond reading past them.
package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults for the zero values of Transport's fields.
const (
	DefaultMaxIdlePerHost         = 256
	DefaultIdleTimeout            = 90 * time.Second
	DefaultBufferSize             = 32 << 10
	DefaultMaxResponseHeaderBytes = 1 << 20
)

// Transport is an http.RoundTripper. Its zero value is not usable: Fallback
// must be set. It is safe for concurrent use.
type Transport struct {
	// Fallback serves every request this transport does not: https URLs,
	// requests a proxy must carry, CONNECT.
	Fallback http.RoundTripper
	// Proxy returns the proxy for a request (http.ProxyFromEnvironment in
	// NewTransport); a request with one goes to Fallback. Nil: no proxy.
	Proxy func(*http.Request) (*url.URL, error)
	// DialContext opens connections; nil: a net.Dialer with a 30 s
	// timeout and 30 s TCP keep-alive, as http.DefaultTransport's.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	MaxIdlePerHost         int           // 0: DefaultMaxIdlePerHost
	IdleTimeout            time.Duration // 0: DefaultIdleTimeout
	ReadBufferSize         int           // 0: DefaultBufferSize
	WriteBufferSize        int           // 0: DefaultBufferSize
	MaxResponseHeaderBytes int64         // 0: DefaultMaxResponseHeaderBytes

	mu   sync.Mutex
	idle map[string][]*conn // by host:port, most recently used last

	dials atomic.Int64
}

// NewTransport returns a Transport for fallback's proxy settings: a request
// that http.ProxyFromEnvironment sends through a proxy goes to fallback.
func NewTransport(fallback *http.Transport) *Transport {
	t := &Transport{Fallback: fallback, Proxy: fallback.Proxy}
	if fallback.ReadBufferSize > 0 {
		t.ReadBufferSize = fallback.ReadBufferSize
	}
	if fallback.WriteBufferSize > 0 {
		t.WriteBufferSize = fallback.WriteBufferSize
	}
	if fallback.MaxIdleConnsPerHost > 0 {
		t.MaxIdlePerHost = fallback.MaxIdleConnsPerHost
	}
	if fallback.IdleConnTimeout > 0 {
		t.IdleTimeout = fallback.IdleConnTimeout
	}
	if fallback.MaxResponseHeaderBytes > 0 {
		t.MaxResponseHeaderBytes = fallback.MaxResponseHeaderBytes
	}
	return t
}

// Dials is the number of connections the transport has opened.
func (t *Transport) Dials() int64 { return t.dials.Load() }

// CloseIdleConnections closes the idle connections, its own and
// Fallback's.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.nc.Close()
		}
	}
	if f, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

// RoundTrip sends req and returns its response. The response body must be
// read to its end or closed; only a body read to its end leaves the
// connection for the next request.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.serves(req) {
		return t.Fallback.RoundTrip(req)
	}
	ctx := req.Context()
	addr := hostPort(req.URL)
	for retried := false; ; retried = true {
		c, err := t.conn(ctx, addr, retried)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := c.roundTrip(ctx, t, req)
		if err == nil {
			return resp, nil
		}
		if retried || !c.reused || !errors.Is(err, errNoResponse) || ctx.Err() != nil {
			closeBody(req)
			return nil, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, fmt.Errorf("%w (rewinding the body to send it again: %v)", err, gerr)
			}
			r := *req // a shallow copy: the caller's request stays as it was
			r.Body = body
			req = &r
		}
	}
}

// serves reports whether req is this transport's to send.
func (t *Transport) serves(req *http.Request) bool {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" || req.Method == http.MethodConnect {
		return false
	}
	if t.Proxy != nil {
		if p, err := t.Proxy(req); err != nil || p != nil {
			return false // Fallback reports the error, or uses the proxy
		}
	}
	return true
}

func hostPort(u *url.URL) string {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// conn returns an idle connection to addr, or a new one (always new when
// fresh is set).
func (t *Transport) conn(ctx context.Context, addr string, fresh bool) (*conn, error) {
	if !fresh {
		if c := t.takeIdle(addr); c != nil {
			return c, nil
		}
	}
	dial := t.DialContext
	if dial == nil {
		dial = defaultDialer.DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, ctx.Err())
		}
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	t.dials.Add(1)
	c := &conn{nc: nc, addr: addr, lr: limitReader{r: nc}}
	c.idle.init(nc)
	c.br = bufio.NewReaderSize(&c.lr, orDefault(t.ReadBufferSize, DefaultBufferSize))
	c.bw = bufio.NewWriterSize(nc, orDefault(t.WriteBufferSize, DefaultBufferSize))
	return c, nil
}

var defaultDialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

func orDefault(n, d int) int {
	if n > 0 {
		return n
	}
	return d
}

func (t *Transport) takeIdle(addr string) *conn {
	timeout := t.IdleTimeout
	if timeout <= 0 {
		timeout = DefaultIdleTimeout
	}
	now := time.Now()
	var stale []*conn
	t.mu.Lock()
	cs := t.idle[addr]
	var c *conn
	for len(cs) > 0 {
		last := cs[len(cs)-1]
		cs[len(cs)-1] = nil
		cs = cs[:len(cs)-1]
		if now.Sub(last.idleAt) < timeout {
			c = last
			break
		}
		stale = append(stale, last)
	}
	if t.idle != nil {
		t.idle[addr] = cs
	}
	t.mu.Unlock()
	for _, s := range stale {
		s.nc.Close()
	}
	if c == nil {
		return nil
	}
	if !c.idle.quiet() {
		c.nc.Close()
		return t.takeIdle(addr) // the next one, if any
	}
	c.reused = true
	return c
}

func (t *Transport) putIdle(c *conn) {
	max := orDefault(t.MaxIdlePerHost, DefaultMaxIdlePerHost)
	c.idleAt = time.Now()
	t.mu.Lock()
	if t.idle == nil {
		t.idle = make(map[string][]*conn)
	}
	if cs := t.idle[c.addr]; len(cs) < max {
		t.idle[c.addr] = append(cs, c)
		c = nil
	}
	t.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
}

// errNoResponse marks a failure before any byte of the response arrived.
var errNoResponse = errors.New("connection closed before a response")

// conn is one connection, owned by one exchange at a time.
type conn struct {
	nc     net.Conn
	addr   string
	lr     limitReader
	br     *bufio.Reader
	bw     *bufio.Writer
	reused bool
	idleAt time.Time
	idle   idleCheck // before reuse: nothing arrived, not closed
}

// roundTrip sends req on c and reads the response head. On error c is
// closed.
func (c *conn) roundTrip(ctx context.Context, t *Transport, req *http.Request) (*http.Response, error) {
	if trace := httptrace.ContextClientTrace(ctx); trace != nil && trace.GotConn != nil {
		info := httptrace.GotConnInfo{Conn: c.nc, Reused: c.reused}
		if c.reused {
			info.WasIdle, info.IdleTime = true, time.Since(c.idleAt)
		}
		trace.GotConn(info)
	}
	// The context's end unblocks whatever this connection is doing; the
	// connection is not used again after that.
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.nc.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", req.Method, c.addr, ctx.Err())
		}
		return nil, err
	}

	werr := req.Write(c.bw)
	if werr == nil {
		werr = c.bw.Flush()
	}
	if werr != nil && ctx.Err() == nil {
		// A server may answer and close before it takes the whole body (a
		// 413 for a body too large): its answer, when there, is the
		// response. Otherwise the request could not be written: a reused
		// connection the server had closed, mostly, and nothing of a
		// response was read. The read cannot wait: the connection is
		// broken.
		if resp, err := c.readHead(t, req); err == nil {
			resp.Close = true
			return c.wrap(ctx, t, req, resp, stop), nil
		}
		return fail(fmt.Errorf("write request to %s: %w: %w", c.addr, errNoResponse, werr))
	}
	if werr != nil {
		return fail(werr)
	}
	resp, err := c.readHead(t, req)
	if err != nil {
		return fail(err)
	}
	return c.wrap(ctx, t, req, resp, stop), nil
}

// readHead reads the response to req up to its body, past 1xx responses,
// with its headers bounded.
func (c *conn) readHead(t *Transport, req *http.Request) (*http.Response, error) {
	limit := t.MaxResponseHeaderBytes
	if limit <= 0 {
		limit = DefaultMaxResponseHeaderBytes
	}
	c.lr.n, c.lr.read = limit, 0
	defer func() { c.lr.n = -1 }() // no bound on the body
	for {
		r, err := http.ReadResponse(c.br, req)
		if err != nil {
			if c.lr.n == 0 {
				return nil, fmt.Errorf("response from %s: headers above %d bytes", c.addr, limit)
			}
			if c.lr.read == 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) {
				return nil, fmt.Errorf("read response from %s: %w: %w", c.addr, errNoResponse, err)
			}
			return nil, fmt.Errorf("read response from %s: %w", c.addr, err)
		}
		if r.StatusCode >= 100 && r.StatusCode < 200 && r.StatusCode != http.StatusSwitchingProtocols {
			continue // 100 Continue, 103 Early Hints: the response follows
		}
		return r, nil
	}
}

// wrap gives resp the body that hands c back at its end.
func (c *conn) wrap(ctx context.Context, t *Transport, req *http.Request, resp *http.Response, stop func() bool) *http.Response {
	reuse := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	b := &body{rc: resp.Body, c: c, t: t, ctx: ctx, stop: stop, reuse: reuse}
	if resp.Body == http.NoBody {
		b.release(true)
		return resp
	}
	resp.Body = b
	return resp
}

var aLongTimeAgo = time.Unix(1, 0)

// limitReader counts what the connection delivered, and bounds it while n
// is not negative (the response head).
type limitReader struct {
	r    io.Reader
	n    int64 // bytes still allowed; negative: no bound
	read int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n == 0 {
		return 0, errHeaderTooLarge
	}
	if l.n > 0 && int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	if l.n > 0 {
		l.n -= int64(n)
	}
	return n, err
}

var errHeaderTooLarge = errors.New("response headers too large")

// body is a response body; at its end the connection goes back to the
// idle pool.
type body struct {
	rc   io.ReadCloser
	c    *conn
	t    *Transport
	ctx  context.Context
	stop func() bool

	reuse bool
	done  atomic.Bool
	eof   bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		b.eof = true
		b.release(true)
		return n, io.EOF
	}
	b.release(false)
	if b.ctx.Err() != nil {
		return n, fmt.Errorf("read response body from %s: %w", b.c.addr, b.ctx.Err())
	}
	return n, err
}

// Close ends the exchange; a body not read to its end takes the connection
// with it.
func (b *body) Close() error {
	b.release(b.eof)
	return nil
}

// release hands the connection back (ok, and reusable) or closes it, once.
func (b *body) release(ok bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	c := b.c
	// stop reports false when the context's end already fired: the
	// connection's deadline is in the past.
	if stopped := b.stop(); ok && b.reuse && stopped && c.br.Buffered() == 0 {
		b.t.putIdle(c)
		return
	}
	c.nc.Close()
}
