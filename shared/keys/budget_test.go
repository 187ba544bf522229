package keys_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
)

// Nanos saturates instead of wrapping: max_budget 1e10 USD is 1e19
// nano-dollars, past int64, and once wrapped to a negative number every
// strict-budget admission was refused as invalid.
func TestNanosSaturates(t *testing.T) {
	for _, tt := range []struct {
		usd  float64
		want int64
	}{
		{0, 0},
		{1.5, 1_500_000_000},
		{0.0000000014, 1},
		{-2, -2_000_000_000},
		{9e9, 9_000_000_000_000_000_000},
		{9.3e9, math.MaxInt64},
		{1e10, math.MaxInt64},
		{1e300, math.MaxInt64},
		{math.Inf(1), math.MaxInt64},
		{-1e10, math.MinInt64},
		{math.Inf(-1), math.MinInt64},
		{math.NaN(), 0},
	} {
		if got := keys.Nanos(tt.usd); got != tt.want {
			t.Errorf("Nanos(%v) = %d, want %d", tt.usd, got, tt.want)
		}
	}
}

// A practically unlimited budget admits a request's hold, as the gateway
// builds it under strict_budgets (Max: keys.Nanos(max_budget)).
func TestHugeBudgetAdmitsHold(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, usd := range []float64{1e10, 1e15} {
		st := limits.NewMemory()
		d, err := st.Admit(context.Background(), limits.AdmitRequest{Now: now, Hold: &limits.Hold{
			ID: "req-1", Amount: 1_000_000, Expires: now.Add(time.Minute),
			Budgets: []limits.BudgetCounter{{Kind: string(keys.KindKey), ID: "k", Base: keys.Nanos(12.5), Max: keys.Nanos(usd)}},
		}})
		if err != nil || !d.Allowed {
			t.Errorf("max_budget %v: allowed %v, err %v", usd, d.Allowed, err)
		}
	}
}
