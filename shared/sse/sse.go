// Package sse reads server-sent event streams event by event, so that the
// gateway forwards whole events as soon as they arrive and can end a broken
// stream on an event boundary.
package sse

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// ErrTruncated means the stream ended in the middle of an event.
var ErrTruncated = errors.New("sse: stream ended inside an event")

// maxEvent bounds one event, so a broken upstream cannot grow memory forever.
const maxEvent = 8 << 20

// Reader splits a stream into events.
type Reader struct {
	r       io.Reader
	buf     []byte
	start   int // first unread byte
	end     int // end of valid data
	scanned int // bytes after start already searched for a boundary
	empty   int // consecutive reads that returned nothing
	err     error

	// BeforeRead, if set, is called before each read of the underlying
	// reader, that is, whenever Next has no complete event buffered and is
	// about to read (and perhaps wait) for more: a forwarder flushes there.
	BeforeRead func()
}

// readSize is a Reader's buffer, and so the most it reads at once: as
// large as the upstream transport's buffer (providers.NewHTTPClient), so
// that one read takes all an upstream burst that arrived.
const readSize = 32 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, readSize); return &b }}

// NewReader returns a Reader over r. Call Release when done with it.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: r, buf: *bufPool.Get().(*[]byte)}
}

// Release returns the Reader's buffer to a pool; the Reader and any event
// it returned must not be used afterwards.
func (r *Reader) Release() {
	if cap(r.buf) == readSize {
		b := r.buf[:cap(r.buf)]
		bufPool.Put(&b)
	}
	r.buf = nil
}

// Next returns the next complete event, including its terminating blank line.
// The slice is valid until the next call. At a clean end it returns io.EOF; if
// the stream ends inside an event, ErrTruncated; otherwise the read error.
func (r *Reader) Next() ([]byte, error) {
	for {
		if ev := r.take(); ev != nil {
			return ev, nil
		}
		if r.err != nil {
			if r.err == io.EOF && len(bytes.TrimSpace(r.buf[r.start:r.end])) > 0 {
				return nil, ErrTruncated
			}
			return nil, r.err
		}
		if r.BeforeRead != nil {
			r.BeforeRead()
		}
		r.fill()
	}
}

func (r *Reader) take() []byte {
	n := r.boundary()
	if n == 0 {
		return nil
	}
	ev := r.buf[r.start : r.start+n]
	r.start += n
	r.scanned = 0
	return ev
}

// boundary returns the length of the first complete event in the buffer
// (through its blank line, "\n\n" or "\r\n\r\n"), or 0. Bytes already
// searched are not searched again.
func (r *Reader) boundary() int {
	data := r.buf[r.start:r.end]
	for i := max(r.scanned, 0); i < len(data); {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			break
		}
		nl := i + j // a line ends here; a blank line follows if the next one is empty
		switch {
		case nl+1 < len(data) && data[nl+1] == '\n':
			return nl + 2
		case nl+2 < len(data) && data[nl+1] == '\r' && data[nl+2] == '\n':
			return nl + 3
		case nl+1 >= len(data) || (data[nl+1] == '\r' && nl+2 >= len(data)):
			r.scanned = nl // undecided until more bytes arrive
			return 0
		}
		i = nl + 1
	}
	r.scanned = max(len(data)-1, 0)
	return 0
}

func (r *Reader) fill() {
	if r.start > 0 { // slide unread data to the front
		n := copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, n
	}
	if r.buf == nil {
		r.err = errors.New("sse: reader used after Release")
		return
	}
	if r.end == len(r.buf) {
		if len(r.buf) >= maxEvent {
			r.err = errors.New("sse: event larger than 8 MiB")
			return
		}
		nb := make([]byte, 2*len(r.buf))
		copy(nb, r.buf[:r.end])
		r.buf = nb
	}
	n, err := r.r.Read(r.buf[r.end:])
	r.end += n
	if err != nil {
		r.err = err
	}
	if n > 0 {
		r.empty = 0
	} else if r.empty++; r.empty >= maxEmptyReads && r.err == nil {
		r.err = io.ErrNoProgress // a reader that never returns data nor an error
	}
}

// maxEmptyReads is how many reads in a row may return nothing and no
// error before the Reader gives up (as bufio does).
const maxEmptyReads = 100

// Data returns the payload of an event's data lines (joined by '\n' when there
// are several). It allocates only for multi-line data.
func Data(ev []byte) []byte {
	var out []byte
	count := 0
	var single []byte
	for len(ev) > 0 {
		line := ev
		if i := bytes.IndexByte(ev, '\n'); i >= 0 {
			line, ev = ev[:i], ev[i+1:]
		} else {
			ev = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if !bytes.HasPrefix(line, []byte("data:")) {
			continue
		}
		v := line[5:]
		if len(v) > 0 && v[0] == ' ' {
			v = v[1:]
		}
		count++
		if count == 1 {
			single = v
			continue
		}
		if count == 2 {
			out = append(out, single...)
		}
		out = append(out, '\n')
		out = append(out, v...)
	}
	if count <= 1 {
		return single
	}
	return out
}

// IsDone reports whether data is the OpenAI end-of-stream marker.
func IsDone(data []byte) bool { return bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) }
