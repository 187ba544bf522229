package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
)

// SweepInterval is how often the strict-budget hold sweeper runs: a hold
// whose request sent no spend event (a crash) is released within its
// expiry (the request's timeout plus gateway.HoldGrace) plus this.
const SweepInterval = time.Minute

// SweepHolds releases the strict-budget holds that expired at now (their
// requests never sent a spend event) and returns how many: the memory
// ledger, or the holds in the spend table.
func (g *Gateway) SweepHolds(ctx context.Context, now time.Time) (int, error) {
	switch st := g.Spend.(type) {
	case *ddbspend.Store:
		return st.SweepHolds(ctx, now)
	}
	if lm, ok := g.Limits.(*limits.Memory); ok {
		return lm.Ledger().Sweep(now), nil
	}
	return 0, nil
}

// startSweeper runs SweepHolds every SweepInterval in local mode (the
// in-process spend queue) when strict budgets are on; deployed, the spend
// function runs it on its schedule (template.yaml). Close stops it.
func startSweeper(s Settings, gw *Gateway, log *slog.Logger) {
	if !gw.Config.General.StrictBudgets || s.SpendQueueURL != "" || s.Lambda {
		return
	}
	now := s.Now
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	gw.stopSweeper = func() { cancel(); <-done }
	go func() {
		defer close(done)
		t := time.NewTicker(SweepInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if n, err := gw.SweepHolds(ctx, now()); err != nil {
					log.LogAttrs(ctx, slog.LevelWarn, "strict budget sweep", slog.String("error", err.Error()))
				} else if n > 0 {
					log.LogAttrs(ctx, slog.LevelWarn, "strict budget holds released", slog.Int("released", n))
				}
			}
		}
	}()
}
