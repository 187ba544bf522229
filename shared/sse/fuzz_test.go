package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// chunked returns its data in reads of fuzz-chosen sizes: each size byte
// gives the next read's length (0 is a read of nothing, as io.Reader
// allows), cycling through sizes.
type chunked struct {
	data  []byte
	sizes []byte
	i     int
	off   int // bytes returned so far
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.off >= len(c.data) {
		return 0, io.EOF
	}
	n := len(c.data) - c.off
	if len(c.sizes) > 0 {
		n = min(n, int(c.sizes[c.i%len(c.sizes)]))
		c.i++
	}
	n = min(n, len(p))
	copy(p, c.data[c.off:c.off+n])
	c.off += n
	return n, nil
}

// zeroRun is the longest run of zero sizes, cyclically (all zero: endless).
func zeroRun(sizes []byte) int {
	if len(sizes) == 0 {
		return 0
	}
	if bytes.Count(sizes, []byte{0}) == len(sizes) {
		return maxEmptyReads
	}
	best, run := 0, 0
	for _, s := range append(append([]byte(nil), sizes...), sizes...) {
		if s == 0 {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// refBoundary is the length of the first complete event of data (through
// the blank line that ends it, "\n\n" or "\n\r\n"), or 0.
func refBoundary(data []byte) int {
	for i := 0; i < len(data); i++ {
		if data[i] != '\n' {
			continue
		}
		if i+1 < len(data) && data[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(data) && data[i+1] == '\r' && data[i+2] == '\n' {
			return i + 3
		}
	}
	return 0
}

// refData is the payload of an event's data lines, by the SSE spec's
// line rules (the reference for Data).
func refData(ev string) string {
	var vals []string
	for _, line := range strings.Split(ev, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			vals = append(vals, strings.TrimPrefix(v, " "))
		}
	}
	return strings.Join(vals, "\n")
}

// FuzzReader reads any stream, chunked as the fuzzer chooses. Invariants:
// no panic, no endless loop (at most one event per byte); the events are
// exactly the reference split of the whole input, however it is chunked;
// the end is io.EOF, or ErrTruncated when non-blank bytes follow the last
// event; BeforeRead comes only when no complete event is buffered;
// Data of each event matches the reference line parse.
//
// The seed corpus is in testdata/fuzz/FuzzReader.
func FuzzReader(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"), []byte{1})
	f.Add([]byte("event: message_start\r\ndata: {}\r\n\r\n: ping\r\n\r\ndata: par"), []byte{3, 0, 7})
	f.Add([]byte("data: a\ndata: b\n\n\n\ndata:c\n\r\n"), []byte{2, 255})
	f.Fuzz(func(t *testing.T, data, sizes []byte) {
		src := &chunked{data: data, sizes: sizes}
		rd := NewReader(src)
		defer rd.Release()
		pos := 0 // start of the next event in data
		// BeforeRead comes only when no complete event is left to return:
		// a forwarder flushes there, and must not while events wait.
		rd.BeforeRead = func() {
			if n := refBoundary(data[pos:src.off]); n > 0 {
				t.Fatalf("BeforeRead with a complete event buffered: %q", data[pos:pos+n])
			}
		}
		for calls := 0; ; calls++ {
			if calls > len(data)+1 {
				t.Fatalf("%d events from %d bytes", calls, len(data))
			}
			ev, err := rd.Next()
			if err != nil {
				if errors.Is(err, io.ErrNoProgress) {
					if zeroRun(sizes) < maxEmptyReads || refBoundary(data[pos:src.off]) > 0 {
						t.Fatalf("ErrNoProgress with at most %d empty reads in a row, %q read", zeroRun(sizes), data[pos:src.off])
					}
					return
				}
				rest := data[pos:]
				if n := refBoundary(rest); n > 0 {
					t.Fatalf("error %v with a complete event left: %q", err, rest[:n])
				}
				switch {
				case len(bytes.TrimSpace(rest)) > 0 && !errors.Is(err, ErrTruncated):
					t.Fatalf("err = %v at a partial event %q, want ErrTruncated", err, rest)
				case len(bytes.TrimSpace(rest)) == 0 && err != io.EOF:
					t.Fatalf("err = %v at a clean end, want io.EOF", err)
				}
				return
			}
			n := refBoundary(data[pos:])
			if n == 0 || !bytes.Equal(ev, data[pos:pos+n]) {
				t.Fatalf("event %q at %d, reference %q", ev, pos, data[pos:pos+n])
			}
			if got, want := string(Data(ev)), refData(string(ev)); got != want {
				t.Fatalf("Data(%q) = %q, want %q", ev, got, want)
			}
			pos += n
		}
	})
}
