package ddbspend_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/ddblocal/ddbharness"
)

// TestConformance runs the suite on both stores, the strict-budget tests
// included: the memory store settling the holds of a memory limits store
// (as local mode wires them), and this one on DynamoDB Local, with holds
// admitted by ddblimits (each client its own SDK client), settled by
// ddbspend consumers, released by SweepHolds.
func TestConformance(t *testing.T) {
	for name, newHarness := range map[string]func(t *testing.T) spendtest.Harness{
		"Memory": func(*testing.T) spendtest.Harness {
			ks, lm := keys.NewMemory(), limits.NewMemory()
			st := spend.NewMemory(ks)
			st.SettleHolds(lm.Ledger())
			return spendtest.Harness{
				Store: st, Other: func(*testing.T) spend.Store { return st }, Keys: ks,
				Strict: &spendtest.Strict{
					Limits:    func(*testing.T) limits.Store { return lm },
					Sweeper:   st,
					Committed: func(_ *testing.T, c string) int64 { v, _ := lm.Ledger().Committed(c); return v },
					OpenHolds: func(*testing.T) int { return lm.Ledger().Holds() },
				},
			}
		},
		"DynamoDB": ddbharness.Spend,
	} {
		t.Run(name, func(t *testing.T) { spendtest.Run(t, newHarness) })
	}
}
