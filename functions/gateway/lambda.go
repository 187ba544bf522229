package main

import (
	"log/slog"
	"net/http"

	"github.com/sluice-gw/sluice/shared/lambdahttp"
)

// startLambda serves h through the streaming function URL runtime; it
// returns only if the runtime loop ends.
func startLambda(h http.Handler, log *slog.Logger) error {
	lambdahttp.Start(h, lambdahttp.WithLogger(log))
	return nil
}
