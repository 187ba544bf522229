package router

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// Many requests at once over every strategy: run with -race. Each request
// still obeys its limits.
func TestConcurrentRequests(t *testing.T) {
	for _, strategy := range []string{"simple-shuffle", "least-busy", "latency-based-routing", "usage-based-routing-v2", "cost-based-routing"} {
		t.Run(strategy, func(t *testing.T) {
			cfg := load(t, modelList(
				dep("g", "a", "openai/m", "rpm: 100000"),
				dep("g", "b", "openai/m", "rpm: 100000"),
				dep("backup", "c", "openai/m", ""),
			)+`router_settings:
  routing_strategy: `+strategy+`
  num_retries: 1
  allowed_fails: 1
  fallbacks: [{g: [backup]}]
`)
			clk := newClock()
			rt := testRouter(t, cfg, Options{Now: clk.Now, Rand: rand.Float64})
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 1)) // used by this goroutine only
					for range 50 {
						fn := plain(func(_ context.Context, a *Attempt) error {
							clk.Advance(1)
							if rng.IntN(4) == 0 {
								return apierr.New(apierr.UpstreamServer, "boom")
							}
							return nil
						})
						res, _ := rt.Do(context.Background(), req("g"), fn)
						if n := len(res.Trace); n > 4 {
							t.Errorf("%d records: %v", n, hops(res))
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
