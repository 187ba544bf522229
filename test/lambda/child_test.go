package lambda_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/lambdahttp"
)

// childEnv makes the test binary, started again as a subprocess, serve
// Lambda invocations through lambdahttp.Start (see runChild).
const childEnv = "SLUICE_TEST_LAMBDA_CHILD"

// childMargin is the deadline margin the child runs with.
const childMargin = 2 * time.Second

// runChild is a Lambda function: the real gateway handler (from
// GATEWAY_CONFIG), plus /test/ routes that misbehave on purpose, served
// through lambdahttp.Start against AWS_LAMBDA_RUNTIME_API. It never returns.
func runChild() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	gw, err := app.Build(context.Background(), app.Settings{
		ConfigPath: os.Getenv("GATEWAY_CONFIG"),
		Getenv:     os.LookupEnv,
		Logger:     log,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	mux := http.NewServeMux()
	mux.Handle("/", gw.Handler)
	mux.HandleFunc("/test/panic-before-headers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream-Key", "sk-secret-upstream")
		panic("provider key sk-secret-upstream leaked into a panic")
	})
	mux.HandleFunc("/test/panic-mid-sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		panic("mid-stream failure")
	})
	mux.HandleFunc("/test/panic-mid-json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"partial":`)
		w.(http.Flusher).Flush()
		panic("mid-body failure")
	})
	mux.HandleFunc("/test/deadline", func(w http.ResponseWriter, r *http.Request) {
		d, ok := r.Context().Deadline()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"has_deadline": ok, "deadline_ms": d.UnixMilli()})
	})
	lambdahttp.Start(mux, lambdahttp.WithDeadlineMargin(childMargin), lambdahttp.WithLogger(log))
}
