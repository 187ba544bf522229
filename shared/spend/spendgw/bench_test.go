package spendgw_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendgw"
)

const mockConfig = `
model_list:
  - model_name: gpt-4o-mini
    litellm_params:
      model: mock/gpt-4o-mini
      input_cost_per_token: 0.00000015
      output_cost_per_token: 0.0000006
`

var (
	jsonRequest   = []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":64,"temperature":0.2,"stream":false}`)
	streamRequest = []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":64,"temperature":0.2,"stream":true}`)
)

func handler(b *testing.B, onComplete func(context.Context, *gateway.Completion)) *gateway.Handler {
	cfg, err := config.Load([]byte(mockConfig), nil)
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	return gateway.New(gateway.Options{
		Config: cfg, Router: router.New(cfg, router.Options{Logger: log}),
		Provider: providers.New(providers.NewHTTPClient()), Logger: log, OnComplete: onComplete,
	})
}

// BenchmarkHandlerSpend is the gateway handler (as BenchmarkHandler in
// shared/gateway, mock provider) without spend, and with spend on as local
// mode runs it: the event built and copied into the in-process queue, which
// records it on another goroutine. Compare allocs/op.
//
//	go test -run '^$' -bench HandlerSpend -benchmem ./shared/spend/spendgw/
func BenchmarkHandlerSpend(b *testing.B) {
	for _, mode := range []struct {
		name string
		body []byte
	}{{"json", jsonRequest}, {"sse", streamRequest}} {
		for _, on := range []bool{false, true} {
			name := mode.name + "/spend=off"
			var hook func(context.Context, *gateway.Completion)
			var q *spend.Queue
			if on {
				name = mode.name + "/spend=on"
				q = spend.NewQueue(spend.NewConsumer(spend.NewMemory(keys.NewMemory()), slog.New(slog.DiscardHandler)), spend.QueueOptions{Size: 1 << 20})
				hook = spendgw.OnComplete(q)
			}
			h := handler(b, hook)
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				var body bytes.Buffer
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, "http://gateway.test/v1/chat/completions", bytes.NewReader(mode.body))
					rec := httptest.NewRecorder()
					body.Reset()
					rec.Body = &body
					h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Fatalf("status %d", rec.Code)
					}
				}
			})
			if q != nil {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_ = q.Close(ctx)
				cancel()
			}
		}
	}
}
