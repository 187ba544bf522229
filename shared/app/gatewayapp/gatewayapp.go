// Package gatewayapp runs the gateway function: it builds the gateway
// through shared/app from the settings appenv read, and serves it through
// the streaming function URL runtime inside Lambda, or as a local
// OpenAI-compatible server (with the admin API on the same port) outside.
package gatewayapp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/inittrace"
	"github.com/sluice-gw/sluice/shared/lambdahttp"
	"github.com/sluice-gw/sluice/shared/logbuf"
)

// Run builds the gateway e describes and serves it until the Lambda
// runtime loop ends, or, locally, until SIGINT or SIGTERM (then it
// shuts the server down and records the spend still queued).
func Run(e appenv.Settings) error {
	if e.Procs > 0 { // before any goroutine starts (appenv.LambdaProcs)
		runtime.GOMAXPROCS(e.Procs)
	}
	if e.CPUProfile != "" && !e.Lambda {
		stop, err := cpuProfile(e.CPUProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	var logOut io.Writer = os.Stderr
	if !e.Lambda { // batch log lines locally; in Lambda every line must be out before the instance freezes
		lb := logbuf.New(os.Stderr, 100*time.Millisecond)
		defer lb.Close()
		logOut = lb
	}
	log := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: e.LogLevel}))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	settings, err := app.FromEnv(ctx, e, log)
	if err != nil {
		return err
	}
	endBuild := inittrace.Span("build")
	gw, err := app.Build(ctx, settings)
	endBuild()
	if err != nil {
		_ = settings.Metrics.Flush() // in Lambda, a failed SSM read still reaches the store-errors alarm
		return err
	}
	if e.Lambda {
		startLambda(gw, log)
		return nil
	}
	return serveLocal(ctx, gw, e, os.Stderr)
}

// cpuProfile writes a CPU profile to path until stop.
func cpuProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// startLambda serves the gateway through the streaming function URL
// runtime; it returns only if the runtime loop ends. After each response
// has gone out whole, and before the invocation ends, the spend events of
// the invocation are sent (SQS, or the in-process queue's store), then its
// metrics (EMF lines on stdout).
func startLambda(gw *app.Gateway, log *slog.Logger) {
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
}
