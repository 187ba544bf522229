package app

import (
	"context"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/inittrace"
)

// readAhead starts reading, in the background, the shared state every first
// request reads whatever its key: the cooldowns of the config's
// deployments, into the cooldown cache (fresh for its TTL, 1 s). In Lambda
// it runs during init, beside the SSM read and the rest of the build,
// instead of in the first request; it also opens the DynamoDB connection
// and pays the SDK's first-call costs there. A failure is the cache's
// (logged, not retried before the TTL); the request then reads as before.
func readAhead(ctx context.Context, cfg *config.Config, cooldowns cooldown.Store, now func() time.Time) {
	if cfg.Router.DisableCooldowns || len(cfg.Deployments) == 0 {
		return
	}
	ids := make([]string, len(cfg.Deployments))
	for i, d := range cfg.Deployments {
		ids[i] = d.ID
	}
	if now == nil {
		now = time.Now
	}
	go func() {
		end := inittrace.Span("read_ahead")
		_, _ = cooldowns.CoolingDown(ctx, ids, now())
		end()
	}()
}
