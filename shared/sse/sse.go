// Package sse reads server-sent event streams event by event, so that the
// gateway forwards whole events as soon as they arrive and can end a broken
// stream on an event boundary.
package sse

import (
	"bytes"
	"errors"
	"io"
)

// ErrTruncated means the stream ended in the middle of an event.
var ErrTruncated = errors.New("sse: stream ended inside an event")

// maxEvent bounds one event, so a broken upstream cannot grow memory forever.
const maxEvent = 8 << 20

// Reader splits a stream into events.
type Reader struct {
	r     io.Reader
	buf   []byte
	start int // first unread byte
	end   int // end of valid data
	err   error
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: r, buf: make([]byte, 8<<10)}
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
		r.fill()
	}
}

// Buffered reports whether a complete event is already buffered, so that a
// caller can write it before flushing.
func (r *Reader) Buffered() bool {
	_, n := eventEnd(r.buf[r.start:r.end])
	return n > 0
}

func (r *Reader) take() []byte {
	data := r.buf[r.start:r.end]
	_, n := eventEnd(data)
	if n == 0 {
		return nil
	}
	ev := data[:n]
	r.start += n
	return ev
}

// eventEnd finds the first blank line ("\n\n" or "\r\n\r\n") and returns its
// index and the length of the event including it.
func eventEnd(b []byte) (int, int) {
	i := bytes.Index(b, []byte("\n\n"))
	j := bytes.Index(b, []byte("\r\n\r\n"))
	switch {
	case i >= 0 && (j < 0 || i < j):
		return i, i + 2
	case j >= 0:
		return j, j + 4
	}
	return -1, 0
}

func (r *Reader) fill() {
	if r.start > 0 { // slide unread data to the front
		n := copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, n
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
}

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
