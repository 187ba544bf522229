package keys_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
)

// TestSpanLiteLLM: a budget's periods are those of LiteLLM's chain of
// resets (get_budget_reset_time at the moment budget_duration was set,
// then at each reset), checked against instants its function gives.
func TestSpanLiteLLM(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct{ dur, anchor, t, start, end string }{
		// another number of days: from the anchor day's midnight
		{"10d", "2026-03-05T13:00:00Z", "2026-03-05T14:00:00Z", "2026-03-05T00:00:00Z", "2026-03-15T00:00:00Z"},
		{"10d", "2026-03-05T13:00:00Z", "2026-03-20T09:00:00Z", "2026-03-15T00:00:00Z", "2026-03-25T00:00:00Z"},
		{"2w", "2026-03-04T08:00:00Z", "2026-03-19T00:00:00Z", "2026-03-18T00:00:00Z", "2026-04-01T00:00:00Z"},
		// calendar periods do not depend on it
		{"1d", "2026-03-05T13:00:00Z", "2026-03-06T01:00:00Z", "2026-03-06T00:00:00Z", "2026-03-07T00:00:00Z"},
		{"7d", "2026-03-05T13:00:00Z", "2026-03-05T14:00:00Z", "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"},
		{"30d", "2026-03-05T13:00:00Z", "2026-03-05T14:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"},
		{"1mo", "2026-03-05T13:00:00Z", "2026-12-31T23:00:00Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		// hours: 5h from 00:30 resets at 05:00, then 10, 15, 20, and 01:00
		// the next day (20 + 5 = 25, past midnight), 05:00...
		{"5h", "2026-03-05T00:30:00Z", "2026-03-05T01:30:00Z", "2026-03-05T00:30:00Z", "2026-03-05T05:00:00Z"},
		{"5h", "2026-03-05T00:30:00Z", "2026-03-05T05:00:00Z", "2026-03-05T05:00:00Z", "2026-03-05T10:00:00Z"},
		{"5h", "2026-03-05T00:30:00Z", "2026-03-05T23:30:00Z", "2026-03-05T20:00:00Z", "2026-03-06T01:00:00Z"},
		{"5h", "2026-03-05T00:30:00Z", "2026-03-06T03:00:00Z", "2026-03-06T01:00:00Z", "2026-03-06T05:00:00Z"},
		{"6h", "2026-03-05T00:30:00Z", "2026-03-05T01:30:00Z", "2026-03-05T00:00:00Z", "2026-03-05T06:00:00Z"},
		// 30h: LiteLLM's next reset is the next day at 06:00, every day
		{"30h", "2026-03-05T03:00:00Z", "2026-03-05T07:00:00Z", "2026-03-05T03:00:00Z", "2026-03-06T06:00:00Z"},
		{"30h", "2026-03-05T03:00:00Z", "2026-03-07T05:00:00Z", "2026-03-06T06:00:00Z", "2026-03-07T06:00:00Z"},
		// minutes: 7m from 10:58:30 resets at 11:03 (58 + 7 - 2), 11:07, ...
		{"7m", "2026-03-05T10:58:30Z", "2026-03-05T11:00:00Z", "2026-03-05T10:58:30Z", "2026-03-05T11:03:00Z"},
		{"7m", "2026-03-05T10:58:30Z", "2026-03-05T11:05:00Z", "2026-03-05T11:03:00Z", "2026-03-05T11:07:00Z"},
		{"7m", "2026-03-05T10:58:30Z", "2026-03-05T11:57:00Z", "2026-03-05T11:56:00Z", "2026-03-05T12:03:00Z"},
		{"7m", "2026-03-05T10:58:30Z", "2026-03-05T23:59:00Z", "2026-03-05T23:56:00Z", "2026-03-06T00:03:00Z"},
		// seconds: 45s resets at :30 and :45 of each minute
		{"45s", "2026-03-05T10:00:50Z", "2026-03-05T10:01:00Z", "2026-03-05T10:00:50Z", "2026-03-05T10:01:30Z"},
		{"45s", "2026-03-05T10:00:50Z", "2026-03-05T10:02:40Z", "2026-03-05T10:02:30Z", "2026-03-05T10:02:45Z"},
	} {
		b := keys.Budget{Duration: tc.dur, Anchor: at(tc.anchor)}
		if got, end := b.PeriodAt(at(tc.t)), b.ResetAt(at(tc.t)); !got.Equal(at(tc.start)) || !end.Equal(at(tc.end)) {
			t.Errorf("%s set at %s, at %s: %v..%v, want %s..%s", tc.dur, tc.anchor, tc.t, got, end, tc.start, tc.end)
		}
	}
}

// TestSpanChains: for any duration, each period ends where the next
// starts and holds the instants it is asked for.
func TestSpanChains(t *testing.T) {
	anchor := time.Date(2026, 3, 5, 10, 58, 31, 0, time.UTC)
	for _, dur := range []string{"45s", "90s", "7m", "45m", "90m", "5h", "7h", "30h", "48h", "3d", "10d", "2w", "1d", "7d", "30d", "2mo"} {
		b := keys.Budget{Duration: dur, Anchor: anchor}
		step := time.Duration(7919) * time.Second
		if dur[len(dur)-1] == 's' || dur[len(dur)-1] == 'm' {
			step = 13 * time.Second
		}
		for at := anchor; at.Before(anchor.Add(2000 * step)); at = at.Add(step) {
			start, end := b.PeriodAt(at), b.ResetAt(at)
			if at.Before(start) || !at.Before(end) || !b.PeriodAt(end).Equal(end) {
				t.Fatalf("%s at %v: %v..%v, the next starts %v", dur, at, start, end, b.PeriodAt(end))
			}
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
