package limits

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluice-gw/sluice/shared/periodic"
)

// HoldSweeper releases the holds of requests that never sent their spend
// event (a crash): every hold expired at now is deleted and its amount
// given back, exactly once against the spend consumer's settlement. The
// store that keeps the holds implements it: the memory Ledger, and the
// DynamoDB spend store (ddbspend), whose table holds them.
type HoldSweeper interface {
	SweepHolds(ctx context.Context, now time.Time) (released int, err error)
}

// SweepInterval is how often the sweeper runs (the spend function's
// schedule in template.yaml; a ticker elsewhere): a hold whose request sent
// no spend event is released within its expiry plus this.
const SweepInterval = time.Minute

// Sweep runs one sweep at now and logs what it did: a warning with the
// number released (any release means a request sent no spend event), or
// the error.
func Sweep(ctx context.Context, s HoldSweeper, now time.Time, log *slog.Logger) (int, error) {
	n, err := s.SweepHolds(ctx, now)
	switch {
	case err != nil:
		log.LogAttrs(ctx, slog.LevelWarn, "strict budget sweep", slog.Int("released", n), slog.String("error", err.Error()))
	case n > 0:
		log.LogAttrs(ctx, slog.LevelWarn, "strict budget holds released by the sweeper (requests that sent no spend event)", slog.Int("released", n))
	}
	return n, err
}

// SweepEvery runs Sweep every interval, at now(), until ctx is done.
func SweepEvery(ctx context.Context, s HoldSweeper, every time.Duration, now func() time.Time, log *slog.Logger) {
	periodic.Run(ctx, every, func(ctx context.Context) { _, _ = Sweep(ctx, s, now(), log) })
}
