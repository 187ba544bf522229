// Package logbuf batches log lines into fewer writes. A log line per
// attempt is a write system call per request when written straight to
// stderr; batching them is the difference between logging costing a few
// percent of a request and a quarter of it under load.
package logbuf

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// Writer buffers whole writes and flushes them at most every interval, or
// sooner when the buffer fills. Each Write is kept whole, so lines from
// concurrent writers never interleave.
type Writer struct {
	mu   sync.Mutex
	buf  *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

// New starts a Writer over w that flushes every interval.
func New(w io.Writer, interval time.Duration) *Writer {
	lw := &Writer{buf: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go lw.loop(interval)
	return lw
}

func (w *Writer) loop(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = w.Flush()
		case <-w.stop:
			return
		}
	}
}

// Write buffers p; a Write larger than the free space flushes first.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(p) > w.buf.Available() && w.buf.Buffered() > 0 {
		if err := w.buf.Flush(); err != nil {
			return 0, err
		}
	}
	return w.buf.Write(p)
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Flush()
}

// Close stops the flusher and flushes what is left.
func (w *Writer) Close() error {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	return w.Flush()
}
