package gateway_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/spend"
)

// discardPublisher takes each spend event as the in-process queue does
// (a copy into a buffered channel), then drops it.
type discardPublisher struct{ ch chan spend.Event }

func (p discardPublisher) Publish(e spend.Event) {
	select {
	case p.ch <- e:
	default:
		<-p.ch
		p.ch <- e
	}
}
func (discardPublisher) Flush(context.Context) error { return nil }
func (discardPublisher) Close(context.Context) error { return nil }

// BenchmarkHandlerCallbacks is BenchmarkHandler's fixed/log=warn case
// with each request's spend event published: "off" (no callback), "on"
// (a logging callback, so the request's messages and answer are copied
// into the event: docs/callbacks.md) and "nocontent" (a callback with
// turn_off_message_logging: nothing copied). The ratios are in
// docs/callbacks.md.
func BenchmarkHandlerCallbacks(b *testing.B) {
	for _, mode := range benchModes {
		for _, cb := range []struct{ name, yaml string }{
			{"off", ""},
			{"on", "litellm_settings:\n  success_callback: [langfuse]\n"},
			{"nocontent", "litellm_settings:\n  success_callback: [langfuse]\n  turn_off_message_logging: true\n"},
		} {
			b.Run(mode.name+"/callbacks="+cb.name, func(b *testing.B) {
				cfg, err := config.Load([]byte(mockConfig+cb.yaml), nil)
				if err != nil {
					b.Fatal(err)
				}
				log := discardLogger(slog.LevelWarn)
				pub := discardPublisher{ch: make(chan spend.Event, 64)}
				h := gateway.New(gateway.Options{
					Config: cfg, Router: router.New(cfg, router.Options{Logger: log}), Provider: fixedProvider{}, Logger: log,
					OnComplete: gateway.PublishSpend(pub, nil),
				})
				serveLoop(b, h, mode.body, nil)
			})
		}
	}
}
