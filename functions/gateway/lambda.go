package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/inittrace"
	"github.com/sluice-gw/sluice/shared/lambdahttp"
)

// startLambda serves the gateway through the streaming function URL
// runtime; it returns only if the runtime loop ends. After each response
// has gone out whole, and before the invocation ends, the spend events of
// the invocation are sent (SQS, or the in-process queue's store), then its
// metrics (EMF lines on stdout).
func startLambda(gw *app.Gateway, log *slog.Logger) error {
	var h http.Handler = gw.Handler
	after := gw.AfterResponse
	if inittrace.On() { // SLUICE_TRACE_INIT=1: the cold start's phases, one line after the first invocation
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inittrace.Mark("request")
			gw.Handler.ServeHTTP(w, r)
			inittrace.Mark("handler_done")
		})
		after = func(ctx context.Context) {
			inittrace.Mark("response_sent")
			end := inittrace.Span("spend_flush")
			gw.AfterResponse(ctx)
			end()
			inittrace.Emit(os.Stderr)
		}
	}
	inittrace.Mark("lambda_start")
	lambdahttp.Start(h, lambdahttp.WithLogger(log), lambdahttp.WithAfterResponse(after))
	return nil
}
