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

// TestPeriodWeeks: LiteLLM's budget_duration takes weeks ("1w", "2w"): N
// weeks are 7N days, 1w resetting on Monday as 7d does.
func TestPeriodWeeks(t *testing.T) {
	for _, tc := range []struct{ w, d string }{{"1w", "7d"}, {"2w", "14d"}, {"4w", "28d"}} {
		pw, err := keys.ParsePeriod(tc.w)
		if err != nil {
			t.Fatalf("ParsePeriod(%q): %v", tc.w, err)
		}
		pd, _ := keys.ParsePeriod(tc.d)
		for _, at := range []time.Time{time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC), time.Date(2027, 2, 28, 23, 59, 59, 0, time.UTC)} {
			if pw.Start(at) != pd.Start(at) || pw.Next(at) != pd.Next(at) {
				t.Errorf("%s at %v: %v..%v, want %s's %v..%v", tc.w, at, pw.Start(at), pw.Next(at), tc.d, pd.Start(at), pd.Next(at))
			}
		}
	}
	if got := keys.PeriodStart("1w", time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)); got != time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) {
		t.Errorf("1w period of Wednesday 2026-12-02 starts %v, want Monday 2026-11-30", got)
	}
	for _, bad := range []string{"w", "0w", "-1w", "100000w", "1.5w"} {
		if _, err := keys.ParsePeriod(bad); err == nil {
			t.Errorf("ParsePeriod(%q) accepted", bad)
		}
	}
}

// TestLinkedNoCostUnlinked: resolving linked budgets costs a warm read of
// a record that links none nothing more than the cached read itself (no
// allocation, no store read), and a linked one reads its budget from the
// cache.
func TestLinkedNoCostUnlinked(t *testing.T) {
	ctx := context.Background()
	m := keys.NewMemory()
	c := keys.NewCached(m, time.Hour, nil)
	h := keys.HashSecret("sk-unlinked")
	if err := m.CreateKey(ctx, keys.Key{Hash: h, Settings: keys.Settings{RPMLimit: 5}}); err != nil {
		t.Fatal(err)
	}
	l := keys.Linked{Reader: c}
	if _, err := l.GetKey(ctx, h); err != nil {
		t.Fatal(err)
	}
	plain := testing.AllocsPerRun(100, func() { _, _ = c.GetKey(ctx, h) })
	linked := testing.AllocsPerRun(100, func() { _, _ = l.GetKey(ctx, h) })
	if linked > plain {
		t.Fatalf("Linked.GetKey allocates %v per read, the cached read alone %v", linked, plain)
	}

	if err := m.Budgets().Create(ctx, keys.BudgetRecord{ID: "b", Settings: keys.Settings{RPMLimit: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := m.EndUsers().Create(ctx, keys.EndUser{ID: "e", Settings: keys.Settings{BudgetID: "b", RPMLimit: 1}}); err != nil {
		t.Fatal(err)
	}
	if e, err := l.GetEndUser(ctx, "e"); err != nil || e.RPMLimit != 9 {
		t.Fatalf("GetEndUser = %+v, %v; want the budget's rpm 9", e.Settings, err)
	}
	if err := m.DeleteBudget(ctx, "b"); err != nil { // behind the cache's back
		t.Fatal(err)
	}
	if e, err := l.GetEndUser(ctx, "e"); err != nil || e.RPMLimit != 9 {
		t.Fatalf("GetEndUser within the TTL = %+v, %v; want the cached budget's rpm 9", e.Settings, err)
	}
}

// TestLinkedOrganization: an organization linking a budget is read with
// the budget's limits in place of its own (the gateway's organization
// check and admission read it through Linked).
func TestLinkedOrganization(t *testing.T) {
	ctx := context.Background()
	m := keys.NewMemory()
	max := 2.5
	if err := m.Budgets().Create(ctx, keys.BudgetRecord{ID: "b", Settings: keys.Settings{RPMLimit: 9, Budget: keys.Budget{MaxBudget: &max}}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Organizations().Create(ctx, keys.Organization{ID: "o", Settings: keys.Settings{BudgetID: "b", RPMLimit: 1}}); err != nil {
		t.Fatal(err)
	}
	o, err := keys.Linked{Reader: m}.GetOrganization(ctx, "o")
	if err != nil || o.RPMLimit != 9 || o.MaxBudget == nil || *o.MaxBudget != max {
		t.Fatalf("GetOrganization = %+v, %v; want the budget's rpm 9 and max_budget %v", o.Settings, err, max)
	}
}
