// Command gateway is the LLM gateway: an OpenAI-compatible HTTP server in
// local mode, or the Lambda function behind a streaming function URL when it
// runs inside Lambda. It only wires; the gateway lives in shared/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/inittrace"
	"github.com/sluice-gw/sluice/shared/logbuf"
	"github.com/sluice-gw/sluice/shared/sysroots"
)

func main() {
	inittrace.Mark("main")
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		if os.Getenv("GOMAXPROCS") == "" {
			// Before any goroutine starts: the CPU time Lambda gives the
			// function, not the CPUs it shows (app.LambdaProcs).
			runtime.GOMAXPROCS(app.LambdaProcs(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), runtime.NumCPU()))
		}
		sysroots.FromBundle() // before the first TLS handshake (init's SSM read): the CA bundle, not the bundle and its copies
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", defaultAddr(), "listen address in local mode (env PORT sets the port)")
	cfgPath := flag.String("config", os.Getenv("GATEWAY_CONFIG"), "LiteLLM config file (env GATEWAY_CONFIG); empty: embedded mock default")
	store := flag.String("store", envOr("GATEWAY_STORE", "memory"), "state store: memory or dynamodb (env GATEWAY_STORE)")
	cpuProfile := flag.String("cpuprofile", "", "local mode: write a CPU profile (go tool pprof) to this file until the gateway stops")
	local, err := localLimits()
	if err != nil {
		return err
	}
	flag.DurationVar(&local.ReadHeaderTimeout, "read-header-timeout", local.ReadHeaderTimeout, "local mode: close a connection whose request headers take longer (env GATEWAY_READ_HEADER_TIMEOUT; 0: none)")
	flag.IntVar(&local.MaxHeaderBytes, "max-header-bytes", local.MaxHeaderBytes, "local mode: request line and headers above this get a 431 (env GATEWAY_MAX_HEADER_BYTES; 0: 1 MB)")
	flag.DurationVar(&local.BodyTimeout, "body-timeout", local.BodyTimeout, "local mode: a request body taking longer gets a 408 (env GATEWAY_BODY_TIMEOUT; 0: none)")
	flag.IntVar(&local.MaxStreams, "max-streams", local.MaxStreams, "local mode: streamed completions served at once; above, a 503 (env GATEWAY_MAX_STREAMS; 0: no bound)")
	flag.IntVar(&local.MaxRequests, "max-requests", local.MaxRequests, "local mode: requests served at once, streams included; above, a 503 (env GATEWAY_MAX_REQUESTS; 0: no bound)")
	flag.Parse()

	inLambda := os.Getenv("AWS_LAMBDA_RUNTIME_API") != ""
	if *cpuProfile != "" && !inLambda {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	var logOut io.Writer = os.Stderr
	if !inLambda { // batch log lines locally; in Lambda every line must be out before the instance freezes
		lb := logbuf.New(os.Stderr, 100*time.Millisecond)
		defer lb.Close()
		logOut = lb
	}
	log := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: logLevel(os.Getenv("LOG_LEVEL"))}))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	settings := app.Settings{
		ConfigPath: *cfgPath, Store: *store, Getenv: os.LookupEnv, Logger: log,
		Tables: tables.NamesFromEnv(os.Getenv),
	}
	settings.MasterKey = firstEnv("GATEWAY_MASTER_KEY", "LITELLM_MASTER_KEY")
	// Spend events: to SQS when the queue is set (held until each response
	// is out, in Lambda); else an in-process queue into the same store.
	settings.SpendQueueURL, settings.Lambda = os.Getenv(tables.SpendQueueEnvVar), inLambda
	if !inLambda { // Lambda: one request per instance; the function URL bounds headers and body
		settings.Local = local
	}
	// Metrics: EMF lines on stdout in Lambda, GET /metrics locally; METRICS=off.
	if settings.Metrics, err = app.MetricsFromEnv(os.Getenv, inLambda, os.Stdout); err != nil {
		return err
	}
	if settings.KeyCacheTTL, err = envDuration("GATEWAY_KEY_CACHE_TTL"); err != nil {
		return err
	}
	if settings.CooldownCacheTTL, err = envDuration("GATEWAY_COOLDOWN_CACHE_TTL"); err != nil {
		return err
	}
	if err := settings.ResolveAWS(ctx, os.Getenv); err != nil {
		return err
	}
	endBuild := inittrace.Span("build")
	gw, err := app.Build(ctx, settings)
	endBuild()
	if err != nil {
		_ = settings.Metrics.Flush() // in Lambda, a failed SSM read still reaches the store-errors alarm
		return err
	}
	if inLambda {
		return startLambda(gw, log)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := gw.Server() // settings.Local's timeouts and bounds
	base := "http://" + ln.Addr().String()
	var models []string
	for _, m := range gw.Router.Models() {
		models = append(models, m.ID)
	}
	source := "embedded default (mock models, no API keys needed)"
	if *cfgPath != "" {
		source = *cfgPath
	}
	fmt.Fprintf(os.Stderr, `
Gateway listening on %s  (config: %s, store: %s)
Models: %s

  curl %s/v1/chat/completions -H 'Content-Type: application/json' \%s
    -d '{"model":"%s","messages":[{"role":"user","content":"Hello"}]}'

Or point any OpenAI SDK at base_url=%s/v1
Admin API (LiteLLM's /key, /team, /user, /customer, /spend routes) on the same port%s
`, base, source, *store, strings.Join(models, ", "), base, authHint(gw.Config.General.MasterKey), first(models), base, adminHint(gw.Config.General.MasterKey))

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if err := gw.Close(shutdown); err != nil { // record the spend still queued
		return fmt.Errorf("spend: %w", err)
	}
	return nil
}

// authHint is the banner's curl header line when a master key is set (its
// value never printed): without it the example is a 401.
func authHint(masterKey string) string {
	if masterKey == "" {
		return ""
	}
	return "\n    -H 'Authorization: Bearer <your master key or a virtual key>' \\"
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

func defaultAddr() string {
	if p := os.Getenv("PORT"); p != "" {
		return "127.0.0.1:" + p
	}
	return "127.0.0.1:4000"
}

// localLimits are local mode's client bounds: the defaults, overridden by
// the environment (the flags override both).
func localLimits() (app.LocalLimits, error) {
	l := app.DefaultLocalLimits()
	var err error
	for _, d := range []struct {
		name string
		v    *time.Duration
	}{{"GATEWAY_READ_HEADER_TIMEOUT", &l.ReadHeaderTimeout}, {"GATEWAY_BODY_TIMEOUT", &l.BodyTimeout}} {
		if _, set := os.LookupEnv(d.name); set {
			if *d.v, err = envDuration(d.name); err != nil {
				return l, err
			}
		}
	}
	for _, n := range []struct {
		name string
		v    *int
	}{{"GATEWAY_MAX_HEADER_BYTES", &l.MaxHeaderBytes}, {"GATEWAY_MAX_STREAMS", &l.MaxStreams}, {"GATEWAY_MAX_REQUESTS", &l.MaxRequests}} {
		if v, set := os.LookupEnv(n.name); set {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				return l, fmt.Errorf("%s=%q: want a whole number, 0 for no bound", n.name, v)
			}
			*n.v = i
		}
	}
	return l, nil
}

// envDuration reads a Go duration ("1s", "500ms"); unset is zero (the default).
func envDuration(name string) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration such as 1s or 500ms", name, v)
	}
	return d, nil
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
