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
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
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
// drains the server and records the spend still queued: shutdown.go).
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
	settings.Sinks = localSinks(e.Getenv)
	endBuild := inittrace.Span("build")
	gw, err := app.Build(ctx, settings)
	endBuild()
	if err != nil {
		_ = settings.Metrics.Flush() // in Lambda, a failed SSM read still reaches the store-errors alarm
		return err
	}
	if e.Lambda {
		go lambdaShutdown(ctx, gw, log)
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
	h := gw.API
	after := gw.AfterResponse
	if inittrace.On() { // SLUICE_TRACE_INIT=1: the cold start's phases, one line after the first invocation
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inittrace.Mark("request")
			gw.API.ServeHTTP(w, r)
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

// serveLocal serves gw on e.Addr, bounded by e.Local, until ctx ends;
// the banner goes to w.
func serveLocal(ctx context.Context, gw *app.Gateway, e appenv.Settings, w io.Writer) error {
	ln, err := net.Listen("tcp", e.Addr)
	if err != nil {
		return err
	}
	var ui string
	gw.HTTP, ui = withConsole(gw.HTTP)
	srv := gw.Server() // settings.Local's timeouts and bounds
	d := newDrainer()
	d.wrap(srv)
	banner(w, gw, "http://"+ln.Addr().String(), ui, e)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return d.shutdown(srv, gw.Close, e.Shutdown, slog.Default())
}

// banner tells who starts a local gateway where it listens, what it
// serves, and how to call it.
func banner(w io.Writer, gw *app.Gateway, base, ui string, e appenv.Settings) {
	var models []string
	for _, m := range gw.Router.Models() {
		models = append(models, m.ID)
	}
	source := "embedded default (mock models, no API keys needed)"
	if e.ConfigPath != "" {
		source = e.ConfigPath
	}
	fmt.Fprintf(w, `
Gateway listening on %s  (config: %s, store: %s)
Models: %s

  curl %s/v1/chat/completions -H 'Content-Type: application/json' \%s
    -d '{"model":"%s","messages":[{"role":"user","content":"Hello"}]}'

Or point any OpenAI SDK at base_url=%s/v1
Admin API (LiteLLM's /key, /team, /user, /customer, /spend routes) on the same port%s
%s`, base, source, e.Store, strings.Join(models, ", "), base, authHint(gw.Config.General.MasterKey), first(models), base, adminHint(gw.Config.General.MasterKey), consoleHint(base, ui))
}

// authHint is the banner's curl header line when a master key is set (its
// value never printed): without it the example is a 401.
func authHint(masterKey string) string {
	if masterKey == "" {
		return ""
	}
	return "\n    -H 'Authorization: Bearer <your master key or a virtual key>' \\"
}

// consoleHint is the banner's line for the admin console ("" when this
// build has none).
func consoleHint(base, ui string) string {
	if ui == "" {
		return ""
	}
	return "Admin console: " + base + ui + "\n"
}

func adminHint(masterKey string) string {
	if masterKey == "" {
		return ": answers 401 until a master key is set (GATEWAY_MASTER_KEY=sk-...)"
	}
	return ": authenticate with the master key"
}

func first(s []string) string {
	if len(s) == 0 {
		return "gpt-4o-mini"
	}
	return s[0]
}
