package main

import (
	"log/slog"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/lambdahttp"
)

// startLambda serves the gateway through the streaming function URL
// runtime; it returns only if the runtime loop ends. After each response
// has gone out whole, and before the invocation ends, the spend events of
// the invocation are sent (SQS, or the in-process queue's store).
func startLambda(gw *app.Gateway, log *slog.Logger) error {
	lambdahttp.Start(gw.Handler, lambdahttp.WithLogger(log), lambdahttp.WithAfterResponse(gw.FlushSpend))
	return nil
}
