package lambdahttp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// errInternal is what the client learns of a panic: the 500 that replaces a
// response whose handler panicked before writing anything, or the SSE error
// event that ends a stream whose handler panicked after it started.
var errInternal = apierr.New(apierr.Internal, "internal error")

// Errors reported to Lambda, through the response stream's error trailers,
// when a response is cut after it started. They carry no detail of the
// failure: that goes to the log.
var (
	errPanicMidStream = messages.InvokeResponse_Error{Type: "Handler.Panic", Message: "the handler panicked after the response started"}
	errAborted        = messages.InvokeResponse_Error{Type: "Handler.Aborted", Message: "the handler aborted the response"}
)

// responseWriter is the http.ResponseWriter handed to the handler. Only the
// handler's goroutine uses it, as net/http's contract says; the status and
// headers are published to Wrap through the ready channel, and the body goes
// through a synchronous pipe to the runtime client.
//
// Body writes are held in a buffer (at most maxBuffered bytes) until the
// handler flushes or returns, as net/http's server holds them: every pass
// through the pipe costs two goroutine hand-offs and the runtime client a
// chunk and a write system call, so a stream that flushes only before
// waiting for its upstream (shared/gateway) sends a burst of events as one
// chunk instead of one per event.
type responseWriter struct {
	log    *slog.Logger
	cancel context.CancelCauseFunc
	req    *http.Request

	header http.Header
	pr     *io.PipeReader
	pw     *io.PipeWriter
	ready  chan struct{} // closed once status and headers are fixed
	served chan struct{} // closed once the handler returned and the stream is closed
	after  func()        // WithAfterResponse's hook, run by the body's Close

	wroteHeader bool
	status      int
	sent        http.Header // the headers as they were when fixed
	sse         bool        // Content-Type text/event-stream
	tail        [2]byte     // the last two body bytes written (SSE: is an event open?)
	buf         []byte      // body bytes not yet sent
	gone        atomic.Bool // the runtime client closed the response stream
	err         error       // first failed write
}

// maxBuffered bounds the body bytes held between flushes; a write that
// would pass it sends what is held first.
const maxBuffered = 32 << 10

// buffers holds the writers' buffers between responses (a Lambda instance
// serves one at a time: one buffer, allocated once).
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, maxBuffered); return &b }}

var (
	_ http.ResponseWriter             = (*responseWriter)(nil)
	_ http.Flusher                    = (*responseWriter)(nil)
	_ interface{ FlushError() error } = (*responseWriter)(nil)
)

func newResponseWriter(cancel context.CancelCauseFunc, log *slog.Logger, req *http.Request) *responseWriter {
	pr, pw := io.Pipe()
	return &responseWriter{
		log:    log,
		cancel: cancel,
		req:    req,
		header: make(http.Header),
		pr:     pr,
		pw:     pw,
		ready:  make(chan struct{}),
		served: make(chan struct{}),
	}
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		// As net/http does; serve recovers it into a 500.
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 {
		// Informational responses cannot cross a function URL; the final
		// status follows.
		return
	}
	w.wroteHeader = true
	w.status = code
	w.sent = w.header.Clone()
	if mt, _, err := mime.ParseMediaType(w.sent.Get("Content-Type")); err == nil && mt == "text/event-stream" {
		w.sse = true
	}
	close(w.ready)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		if len(p) > 0 && w.header.Get("Content-Type") == "" {
			w.header.Set("Content-Type", http.DetectContentType(p))
		}
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if w.status == http.StatusNoContent || w.status == http.StatusNotModified {
		return 0, http.ErrBodyNotAllowed
	}
	if w.req.Method == http.MethodHead {
		return len(p), nil // the headers a GET would get, no body: as net/http
	}
	if w.sse {
		if len(p) >= 2 {
			w.tail = [2]byte{p[len(p)-2], p[len(p)-1]}
		} else {
			w.tail = [2]byte{w.tail[1], p[0]}
		}
	}
	if w.gone.Load() {
		w.fail(ErrResponseGone)
		return 0, w.err
	}
	if len(w.buf)+len(p) > maxBuffered {
		if err := w.send(); err != nil {
			return 0, err
		}
		if len(p) >= maxBuffered {
			if _, err := w.pw.Write(p); err != nil {
				w.fail(err)
				return 0, w.err
			}
			return len(p), nil
		}
	}
	if w.buf == nil {
		w.buf = (*buffers.Get().(*[]byte))[:0]
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// send hands the buffered body bytes to the runtime client, which sends them
// on as one chunk straight away.
func (w *responseWriter) send() error {
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	_, err := w.pw.Write(w.buf)
	w.buf = w.buf[:0]
	if err != nil {
		w.fail(err)
	}
	return w.err
}

// fail records the first failed write and cancels the request's context.
func (w *responseWriter) fail(err error) {
	if w.err == nil {
		w.err = fmt.Errorf("lambdahttp: write response: %w", err)
	}
	w.cancel(ErrResponseGone)
}

// Flush sends the status and headers if they are not out yet, and the body
// bytes written since the last flush.
func (w *responseWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush for http.ResponseController: it reports a response that
// can no longer be delivered.
func (w *responseWriter) FlushError() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.send()
}

// serve runs the handler and ends the response stream when it returns.
func (w *responseWriter) serve(h http.Handler, r *http.Request) {
	var abort error
	defer close(w.served)
	defer func() {
		if !w.wroteHeader {
			w.WriteHeader(http.StatusOK)
		}
		_ = w.send() // what the handler wrote before it returned (or panicked)
		if w.buf != nil {
			b := w.buf[:0]
			w.buf = nil
			buffers.Put(&b)
		}
		// The handler is done: release what hangs on its context, as net/http
		// does when ServeHTTP returns.
		w.cancel(context.Canceled)
		if abort != nil {
			// The runtime client turns a read error into the stream's error
			// trailers; the function URL then cuts the response.
			_ = w.pw.CloseWithError(abort)
			return
		}
		_ = w.pw.Close()
	}()
	defer func() {
		if v := recover(); v != nil {
			abort = w.recovered(v)
		}
	}()
	h.ServeHTTP(w, r)
}

// recovered answers for a handler that panicked with v: a clean error if the
// client can still be told in-band, otherwise the error that cuts the stream.
func (w *responseWriter) recovered(v any) error {
	if v == http.ErrAbortHandler {
		w.log.Warn("handler aborted the response", "method", w.req.Method, "path", w.req.URL.Path)
		if w.wroteHeader {
			return errAborted
		}
	} else {
		// The panic value and where it happened, but no stack dump: a stack
		// holds request data, and log lines must not.
		w.log.Error("recovered a panic in the HTTP handler",
			"method", w.req.Method, "path", w.req.URL.Path,
			"panic", fmt.Sprint(v), "at", panicSite(),
			"response_started", w.wroteHeader, "sse", w.sse)
	}
	switch {
	case !w.wroteHeader:
		clear(w.header)
		w.header.Set("X-Content-Type-Options", "nosniff")
		apierr.Write(w, errInternal)
		return nil
	case w.sse:
		if w.tail != [2]byte{} && w.tail != [2]byte{'\n', '\n'} {
			_, _ = w.Write([]byte("\n\n")) // end the open event: the error is an event of its own
		}
		_, _ = w.Write(apierr.SSE(errInternal))
		return nil
	default:
		return errPanicMidStream
	}
}

// panicSite names the function and line that panicked: the first frame
// below the runtime's panic machinery.
func panicSite() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	afterPanic := false
	for {
		f, more := frames.Next()
		if f.Function == "runtime.gopanic" {
			afterPanic = true
		} else if afterPanic && !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf("%s (%s:%d)", f.Function, f.File, f.Line)
		}
		if !more {
			return "unknown"
		}
	}
}

// response waits until the status and headers are fixed and returns the
// streaming response whose body the handler is still writing.
func (w *responseWriter) response() *events.LambdaFunctionURLStreamingResponse {
	<-w.ready
	resp := &events.LambdaFunctionURLStreamingResponse{
		StatusCode: w.status,
		Body:       &responseBody{pr: w.pr, cancel: w.cancel, after: w.after, gone: &w.gone},
	}
	if len(w.sent) > 0 {
		resp.Headers = make(map[string]string, len(w.sent))
		for k, vs := range w.sent {
			if hopByHop[k] {
				continue
			}
			if k == "Set-Cookie" {
				resp.Cookies = vs
				continue
			}
			resp.Headers[k] = strings.Join(vs, ",")
		}
	}
	return resp
}

// hopByHop are headers about the framing of one connection. Lambda frames
// the function URL's response itself (it streams it chunked), so a handler's
// Content-Length or Connection would only contradict it.
var hopByHop = map[string]bool{
	"Connection":        true,
	"Content-Length":    true,
	"Keep-Alive":        true,
	"Trailer":           true,
	"Transfer-Encoding": true,
	"Upgrade":           true,
}

// responseBody is the stream the runtime client reads. It closes it after the
// response POST ends, successfully or not; if the handler is still running
// then, its writes fail and its context is cancelled with ErrResponseGone.
//
// Close also runs the WithAfterResponse hook, once: the runtime client
// calls it after the response POST and before it asks for the next event.
type responseBody struct {
	pr     *io.PipeReader
	cancel context.CancelCauseFunc
	after  func()
	gone   *atomic.Bool // the writer's: its buffered writes fail from now on
	once   sync.Once
}

func (b *responseBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *responseBody) Close() error {
	b.gone.Store(true)
	b.cancel(ErrResponseGone)
	err := b.pr.CloseWithError(ErrResponseGone)
	if b.after != nil {
		b.once.Do(b.after)
	}
	return err
}
