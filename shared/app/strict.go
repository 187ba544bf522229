package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluice-gw/sluice/shared/limits"
)

// startSweeper releases the strict-budget holds of requests that sent no
// spend event, every limits.SweepInterval, in local mode (the in-process
// spend queue) when strict budgets are on: on the spend store that settles
// them (the memory store on the memory ledger, the DynamoDB store on the
// holds in the spend table). Deployed, the spend function sweeps on its
// schedule (template.yaml). Close stops it.
func startSweeper(s Settings, gw *Gateway, log *slog.Logger) {
	sw, ok := gw.Spend.(limits.HoldSweeper)
	if !ok || !gw.Config.General.StrictBudgets || s.SpendQueueURL != "" || s.Lambda {
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
		limits.SweepEvery(ctx, sw, limits.SweepInterval, now, log)
	}()
}
