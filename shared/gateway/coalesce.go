package gateway

import (
	"net"
	"net/http"
	"net/http/httptrace"
	"syscall"
	"time"
)

// Flushing a stream costs a write system call and a packet per flush, on
// both ends. An upstream often sends several events back to back (a burst
// after a stall, a fast model, a provider that writes one event per
// write), and forwarding each with its own flush makes the gateway, and
// the client, pay for every one. So a stream flushes what it wrote when it
// is about to wait for the upstream: right before a read of the upstream
// response, unless more of that response is already waiting in the kernel
// (the read will not wait) and the bounds below allow holding on.
//
// Only a plain TCP connection (HTTP/1) is asked. Over TLS the bytes waiting
// may be part of a record, and the read would wait for the rest of it (a
// retransmission, if its packet was lost) with the held events unsent; an
// HTTP/2 connection is shared by other streams. Those flush before every
// read, as before.
const coalesceMaxBytes = 32 << 10

var coalesceMaxDelay = time.Millisecond // a variable for tests only

// coalescer flushes a stream's writes before it waits for the upstream.
type coalescer struct {
	w       http.ResponseWriter
	tr      httptrace.ClientTrace
	conn    syscall.RawConn // the upstream connection; nil: flush before every read
	ctl     func(fd uintptr)
	pending int       // bytes the kernel holds for conn, set by ctl
	bytes   int       // written since the last flush
	since   time.Time // the first write since the last flush
}

// trace returns a client trace that notes the connection the attempt's
// response arrives on.
func (c *coalescer) trace() *httptrace.ClientTrace {
	c.tr.GotConn = c.gotConn
	return &c.tr
}

func (c *coalescer) gotConn(info httptrace.GotConnInfo) {
	if sc, ok := info.Conn.(*net.TCPConn); ok && pendingSupported {
		if rc, err := sc.SyscallConn(); err == nil {
			c.conn = rc
			c.ctl = c.control
		}
	}
}

func (c *coalescer) control(fd uintptr) { c.pending = pendingBytes(fd) }

// wrote notes n bytes written towards the client; past the byte bound it
// flushes at once.
func (c *coalescer) wrote(n int) {
	if c.bytes == 0 && c.conn != nil {
		c.since = time.Now()
	}
	c.bytes += n
	if c.bytes >= coalesceMaxBytes {
		c.flush()
	}
}

// beforeRead runs before each read of the upstream response.
func (c *coalescer) beforeRead() {
	if c.bytes == 0 || c.more() {
		return
	}
	c.flush()
}

// more reports whether more of the response is already waiting, and the
// written bytes have not been held back too long.
func (c *coalescer) more() bool {
	if c.conn == nil {
		return false
	}
	c.pending = 0
	if c.conn.Control(c.ctl) != nil || c.pending <= 0 {
		return false
	}
	return time.Since(c.since) < coalesceMaxDelay
}

func (c *coalescer) flush() {
	flush(c.w)
	c.bytes = 0
}
