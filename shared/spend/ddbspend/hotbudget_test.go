package ddbspend_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/ddblocal/ddbharness"
)

// TestHotBudget runs the strict-budget tests with every admission through
// a throttling proxy that lets each item take 40 write units a second (one
// budget counter: 20 reservations a second), each client its own store (a
// gateway instance): the key's counter turns hot (limits/hot_budget.go) by
// the rate it sees (hint=40) or by the throttling it meets (hint=0: the
// store believes DynamoDB's 1,000 units a second), and the budget still
// holds exactly: recorded spend never over max_budget, every hold settled
// or released exactly once (the counter's shards add up to the recorded
// spend once all are), and the small budgets of the other tests stay cold
// (too small to split).
func TestHotBudget(t *testing.T) {
	for _, hint := range []float64{40, 0} {
		t.Run(map[float64]string{40: "hint=40", 0: "hint=0"}[hint], func(t *testing.T) {
			var hot atomic.Int64
			spendtest.RunStrict(t, func(t *testing.T) spendtest.Harness {
				names := ddblocal.Tables(t)
				th := ddblocal.NewThrottler(t, "", 40)
				mk := func(t *testing.T) *ddblimits.Store {
					client := ddb.NewClient(ddblocal.ConfigAt(th.URL), ddb.ClientOptions{Emulator: true})
					return ddblimits.New(client, names.Counters, ddblimits.Options{HoldsTable: names.Spend, Timeout: 60 * time.Second, ItemWrites: hint})
				}
				h := ddbharness.SpendOn(t, names)
				reader := mk(t)
				h.Strict.Limits = func(t *testing.T) limits.Store { return mk(t) }
				sum := h.Strict.Committed // the shards summed
				h.Strict.Committed = func(t *testing.T, counter string) int64 {
					if b, err := limits.ParseBudgetCounter(counter); err == nil {
						if _, n, err := reader.BudgetCommitted(context.Background(), b.Kind, b.ID, b.Period); err == nil && n > 1 {
							t.Logf("%s: hot over %d shards", counter, n)
							hot.Add(1)
						}
					}
					return sum(t, counter)
				}
				return h
			})
			if hot.Load() == 0 {
				t.Error("no budget counter turned hot")
			}
		})
	}
}
