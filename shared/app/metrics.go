package app

import (
	"context"
	"crypto/subtle"
	"io"
	"log/slog"
	"net/http"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/metrics"
)

// Environment variables of the metrics (appenv).
const (
	MetricsEnv          = appenv.MetricsEnv
	MetricsNamespaceEnv = appenv.MetricsNamespaceEnv
)

// MetricsPath is local mode's Prometheus endpoint.
const MetricsPath = "/metrics"

// MetricsFromEnv returns the registry the environment asks for (METRICS,
// METRICS_NAMESPACE through lookup): see newMetrics.
func MetricsFromEnv(lookup func(string) string, lambda bool, out io.Writer) (*metrics.Registry, error) {
	on, err := appenv.MetricsOn(lookup(MetricsEnv))
	if err != nil {
		return nil, err
	}
	return newMetrics(on, lookup(MetricsNamespaceEnv), lambda, out), nil
}

// newMetrics is nil when off; in Lambda, one EMF line per request written
// to out (stdout) by FlushMetrics, in namespace; locally, the counts GET
// /metrics renders.
func newMetrics(on bool, namespace string, lambda bool, out io.Writer) *metrics.Registry {
	if !on {
		return nil
	}
	o := metrics.Options{Namespace: namespace, Prometheus: !lambda}
	if lambda {
		o.EMF = out
	}
	return metrics.New(o)
}

// ddbOptions are the DynamoDB client options of s: failed calls count as
// store errors.
func (s *Settings) ddbOptions() ddb.ClientOptions {
	o := ddb.ClientOptions{Emulator: s.Emulator}
	if m := s.Metrics; m != nil {
		o.OnUnavailable = func() { m.StoreError(metrics.StoreDynamoDB) }
	}
	return o
}

// sqsErrors counts failed SQS calls (nil: no metrics).
func (s *Settings) sqsErrors() func() {
	if m := s.Metrics; m != nil {
		return func() { m.StoreError(metrics.StoreSQS) }
	}
	return nil
}

// FlushMetrics writes the EMF lines of the requests served since the last
// flush (Lambda, after each response).
func (g *Gateway) FlushMetrics() {
	if err := g.Metrics.Flush(); err != nil {
		slog.Default().LogAttrs(context.Background(), slog.LevelWarn, "metrics flush", slog.String("error", err.Error()))
	}
}

// AfterResponse is the Lambda hook after each response: the spend events,
// then the metrics (which count what the spend flush met); then, when the
// secrets are older than their TTL, their re-read (off every request's
// path: the next invocation waits for it only if it comes at once).
func (g *Gateway) AfterResponse(ctx context.Context) {
	g.FlushSpend(ctx)
	g.FlushMetrics()
	if g.Secrets != nil {
		g.Secrets.RefreshStale(ctx)
	}
}

// withMetricsRoute serves GET /metrics (Prometheus text) in front of next,
// to the master key only: the metrics name key aliases, teams and spend.
// With no master key set it answers 401 as the admin routes do, rather
// than serve them to anyone who can reach the port.
func withMetricsRoute(next http.Handler, m *metrics.Registry, masterKey string) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != MetricsPath {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", http.MethodGet)
			apierr.Write(w, apierr.New(apierr.MethodNotAllowed, "%s %s is not allowed; use GET", r.Method, MetricsPath))
			return
		}
		if masterKey == "" {
			apierr.Write(w, apierr.New(apierr.Unauthorized, "%s needs the master key, and none is set (GATEWAY_MASTER_KEY=sk-...)", MetricsPath))
			return
		}
		token := gateway.Bearer(r)
		if token == "" {
			apierr.Write(w, apierr.New(apierr.Unauthorized, "missing API key: send the master key as 'Authorization: Bearer <key>'"))
			return
		}
		if subtle.ConstantTimeCompare([]byte(token), []byte(masterKey)) != 1 {
			apierr.Write(w, apierr.New(apierr.Unauthorized, "%s needs the master key", MetricsPath))
			return
		}
		w.Header().Set("Content-Type", metrics.ContentType)
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodHead {
			return
		}
		if err := m.WritePrometheus(w); err != nil {
			slog.Default().LogAttrs(r.Context(), slog.LevelDebug, "metrics write", slog.String("error", err.Error()))
		}
	})
}
