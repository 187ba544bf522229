// Package lambdahttp serves an http.Handler through a Lambda function URL whose
// InvokeMode is RESPONSE_STREAM.
//
// It builds on aws-lambda-go's runtime client (package lambda) and its
// function URL event types, and replaces the handler glue of its lambdaurl
// package, which this package improves on in four ways:
//
//   - The ResponseWriter implements http.Flusher (and FlushError, for
//     http.ResponseController). As net/http's server does, it holds body
//     writes (up to 32 KB) until the handler flushes or returns; a flush hands
//     them through a synchronous pipe to the runtime client, which sends them
//     at once as one HTTP/1.1 chunk of its POST to
//     /2018-06-01/runtime/invocation/{id}/response. lambdaurl hands over every
//     Write, which costs a chunk and a write system call per SSE event.
//   - A panic in the handler never crashes the function. Before the response
//     started, the client gets a clean 500 with an OpenAI-style error body;
//     after an SSE stream started, an in-band SSE error event ends the stream;
//     after any other body started, the stream is cut and the error is
//     reported to Lambda through the Lambda-Runtime-Function-Error-Type and
//     -Body trailers. The panic and its stack go to the log, never to the
//     client.
//   - The request context ends a margin before the Lambda deadline, so the
//     handler has time to tell the client why it stops.
//   - The request context is cancelled when the response can no longer be
//     delivered: a Write that fails, or the runtime client closing the
//     response stream, cancels it with ErrResponseGone as its cause, so that
//     the upstream call stops too. Two limits: Lambda does not stop or fail a
//     streaming response whose client went away (it bills the function until
//     it ends), so there the deadline margin is what bounds the call; and a
//     response stream that the Runtime API drops is noticed by net/http only
//     at the next write (aws-lambda-go then exits the process).
//
// Wire protocol note: Lambda's documentation asks a streaming runtime to send
// the header Lambda-Runtime-Function-Response-Mode: streaming. aws-lambda-go's
// runtime client (v1.55.1) does not, and offers no way to add it; its own
// lambdaurl package streams through function URLs without it. The response is
// still a chunked POST with Content-Type
// application/vnd.awslambda.http-integration-response whose body is a JSON
// prelude {statusCode, headers, cookies}, eight NUL bytes, then the body.
package lambdahttp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// DefaultDeadlineMargin is how long before the Lambda deadline the request
// context ends unless WithDeadlineMargin says otherwise.
const DefaultDeadlineMargin = time.Second

// ErrResponseGone is the cause of a request context cancelled because the
// response can no longer be delivered (the client or the runtime went away).
var ErrResponseGone = errors.New("lambdahttp: response stream closed")

// ErrDeadline is the cause of a request context that reached the Lambda
// deadline minus the margin.
var ErrDeadline = errors.New("lambdahttp: lambda deadline (minus margin) reached")

// HandlerFunc is the Lambda handler that Wrap returns.
type HandlerFunc = func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error)

// Option configures Wrap and Start.
type Option func(*options)

type options struct {
	margin time.Duration
	log    *slog.Logger
	after  func(context.Context)
}

// WithDeadlineMargin sets how long before the Lambda deadline the request
// context ends (DefaultDeadlineMargin if unset; negative values count as 0).
func WithDeadlineMargin(d time.Duration) Option {
	return func(o *options) { o.margin = max(d, 0) }
}

// WithLogger sets the logger for recovered panics and stream errors
// (slog.Default() if unset).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithAfterResponse sets f to run once per invocation after the response
// has gone out whole (the runtime client finished its response POST, so
// the client has the last byte) and the handler has returned, but before
// the invocation ends: the runtime asks for the next event only once f
// returns, so work done in f is never frozen half-way. Its context carries
// the invocation's deadline, not the request's (which has ended). The
// gateway sends its spend events there.
func WithAfterResponse(f func(ctx context.Context)) Option {
	return func(o *options) { o.after = f }
}

func newOptions(opts []Option) options {
	o := options{margin: DefaultDeadlineMargin, log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Start serves h through the Lambda Runtime API named by the environment
// variable AWS_LAMBDA_RUNTIME_API, as a function URL with InvokeMode
// RESPONSE_STREAM. It never returns: on a fatal runtime error the process
// exits, which makes Lambda start a fresh one. Build with -tags lambda.norpc.
func Start(h http.Handler, opts ...Option) {
	o := newOptions(opts)
	lambda.StartHandlerFunc(wrap(h, o))
}

// Wrap converts h into a Lambda handler for function URL requests whose
// response streams (InvokeMode RESPONSE_STREAM). It returns once h has set the
// status and headers; the body follows through the returned response's Body
// while h runs.
func Wrap(h http.Handler, opts ...Option) HandlerFunc {
	return wrap(h, newOptions(opts))
}

func wrap(h http.Handler, o options) HandlerFunc {
	return func(ctx context.Context, ev *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
		invocation := ctx
		ctx, cancel := context.WithCancelCause(ctx)
		if d, ok := ctx.Deadline(); ok {
			var stop context.CancelFunc
			ctx, stop = context.WithDeadlineCause(ctx, d.Add(-o.margin), ErrDeadline)
			inner := cancel
			cancel = func(cause error) { inner(cause); stop() }
		}
		req, err := newRequest(ctx, ev)
		if err != nil {
			cancel(err)
			return nil, err
		}
		w := newResponseWriter(cancel, o.log, req)
		if o.after != nil {
			w.after = func() { afterResponse(invocation, w.served, o.after) }
		}
		go w.serve(h, req)
		return w.response(), nil
	}
}

// afterResponse waits for the handler to return (it has, unless the
// response POST failed early; its context is cancelled by then), at most
// until the invocation's deadline, then runs f with the invocation's
// deadline.
func afterResponse(invocation context.Context, served <-chan struct{}, f func(context.Context)) {
	ctx := context.WithoutCancel(invocation)
	cancel := context.CancelFunc(func() {})
	if d, ok := invocation.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, d)
	}
	defer cancel()
	select {
	case <-served:
	case <-ctx.Done():
	}
	f(ctx)
}
