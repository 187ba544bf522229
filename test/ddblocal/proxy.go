package ddblocal

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy in front of DynamoDB Local that makes the store
// slow or lossy the way a network or an overloaded service is, after the
// fact: a request always reaches the emulator at once (so its write is
// applied), and only its answer is late (SetDelay) or never comes
// (DropNext: the connection is closed once the emulator answered). Give a
// store the proxy's URL with ConfigAt.
//
// The delay applies to the first bytes of each answer, measured from when
// they arrive from the emulator; each client connection has its own
// upstream connection, so concurrent requests are delayed concurrently.
type Proxy struct {
	// URL is the proxy's address, http://127.0.0.1:<port>.
	URL string

	target string
	delay  atomic.Int64 // nanoseconds added to each answer
	drop   atomic.Int64 // answers still to drop
	// Requests counts the requests forwarded; Dropped the answers
	// dropped, Answered those delivered.
	Requests, Dropped, Answered atomic.Int64

	l      net.Listener
	mu     sync.Mutex
	open   map[net.Conn]bool
	paused chan struct{} // closed by Resume; nil: not paused
	wg     sync.WaitGroup
}

// NewProxy starts a proxy on 127.0.0.1:0 in front of the emulator (or of
// target, a host:port, when not empty); it stops when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	if target == "" {
		require(t)
		target = hostPort(endpoint())
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{URL: "http://" + l.Addr().String(), target: target, l: l, open: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// hostPort returns the host:port of an endpoint URL such as
// http://127.0.0.1:8000.
func hostPort(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return endpoint
}

// SetDelay makes every answer from now on arrive d late (0: none).
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// DropNext drops the next n answers: each request is forwarded, its answer
// read from the emulator, and the client's connection closed without it.
func (p *Proxy) DropNext(n int) { p.drop.Store(int64(n)) }

// Pause holds every request that arrives from now on, unforwarded, until
// Resume (a request already forwarded is served as usual).
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
}

// Resume forwards the requests Pause held, and those after.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
}

// gate waits while the proxy is paused.
func (p *Proxy) gate() {
	p.mu.Lock()
	ch := p.paused
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.relay(c)
		}()
	}
}

// track records c as open (false once the proxy is closing).
func (p *Proxy) track(c net.Conn, open bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open == nil {
		return false
	}
	if open {
		p.open[c] = true
	} else {
		delete(p.open, c)
	}
	return true
}

// relay serves one client connection over its own upstream connection.
func (p *Proxy) relay(client net.Conn) {
	defer client.Close()
	if !p.track(client, true) {
		return
	}
	defer p.track(client, false)
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	if !p.track(up, true) {
		return
	}
	defer p.track(up, false)
	// sent counts the request chunks forwarded, answered is its value when
	// the last answer began: they differ while a request is outstanding.
	var sent, answered atomic.Int64
	var clientGone atomic.Bool
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				if sent.Load() == answered.Load() { // a new request
					p.gate()
					p.Requests.Add(1)
				}
				sent.Add(1)
				if _, werr := up.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		// The client is gone (a deadline, usually). As with a real store,
		// a request it sent is still served: its answer is awaited (for a
		// while) before the upstream connection closes.
		clientGone.Store(true)
		if sent.Load() == answered.Load() {
			up.Close()
		} else {
			_ = up.SetReadDeadline(time.Now().Add(time.Minute))
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			// The first chunk after a new request is the start of its answer.
			if s := sent.Load(); s != answered.Load() {
				answered.Store(s)
				if clientGone.Load() {
					return // served; nobody to tell
				}
				if p.drop.Add(-1) >= 0 {
					p.Dropped.Add(1)
					return // the write is applied; its answer is lost
				}
				p.drop.Add(1)
				if d := time.Duration(p.delay.Load()); d > 0 {
					time.Sleep(d)
				}
				p.Answered.Add(1)
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // the emulator closed, or the client did
		}
	}
}

// close stops accepting, closes every connection and waits for the relays.
func (p *Proxy) close() {
	p.l.Close()
	p.Resume()
	p.mu.Lock()
	for c := range p.open {
		c.Close()
	}
	p.open = nil
	p.mu.Unlock()
	p.wg.Wait()
}
