package gateway_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/router"
)

// BenchmarkHandlerMetrics is BenchmarkHandler's fixed/log=warn case with
// metrics on: "off" (no registry, as BenchmarkHandler), "prom" (local
// mode's counts) and "emf" (Lambda: one EMF line per request, flushed to
// io.Discard after each, as the after-response hook does).
func BenchmarkHandlerMetrics(b *testing.B) {
	for _, mode := range []struct {
		name   string
		stream bool
		body   []byte
	}{{"json", false, jsonRequest}, {"sse", true, streamRequest}} {
		for _, m := range []string{"off", "prom", "emf"} {
			b.Run(mode.name+"/metrics="+m, func(b *testing.B) {
				cfg, err := config.Load([]byte(mockConfig), nil)
				if err != nil {
					b.Fatal(err)
				}
				log := discardLogger(slog.LevelWarn)
				var reg *metrics.Registry
				switch m {
				case "prom":
					reg = metrics.New(metrics.Options{Prometheus: true})
				case "emf":
					reg = metrics.New(metrics.Options{EMF: io.Discard})
				}
				h := gateway.New(gateway.Options{
					Config: cfg, Router: router.New(cfg, router.Options{Logger: log}), Provider: fixedProvider{}, Logger: log, Metrics: reg,
				})
				serveLoop(b, h, mode.body, func() { _ = reg.Flush() })
			})
		}
	}
}
