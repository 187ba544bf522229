package spend_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
)

func TestStrictMemory(t *testing.T) {
	spendtest.RunStrict(t, func(t *testing.T) (spendtest.Harness, spendtest.Strict) {
		ks := keys.NewMemory()
		lm := limits.NewMemory()
		st := spend.NewMemory(ks)
		st.SettleHolds(lm.Ledger())
		return spendtest.Harness{Store: st, Other: func(*testing.T) spend.Store { return st }, Keys: ks},
			spendtest.Strict{
				Limits:    func(*testing.T) limits.Store { return lm },
				Sweep:     st.SweepHolds,
				Committed: func(_ *testing.T, c string) int64 { v, _ := lm.Ledger().Committed(c); return v },
				OpenHolds: func(*testing.T) int { return lm.Ledger().Holds() },
			}
	})
}
