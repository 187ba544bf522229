package limitstest

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/limits"
)

// testHolds: a strict-budget hold is admitted with the rate-limit counters,
// all or nothing: it starts its counter at Base, fills it up to Max and no
// further, says which budget refused it, and a hold refused (or a request
// refused by a rate limit) writes nothing.
func testHolds(t *testing.T, h Harness) {
	if h.Committed == nil {
		t.Skip("no Committed reader")
	}
	s := h.NewStore(t)
	key, team := id("key"), id("team")
	period := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	hold := func(amount int64) *limits.Hold {
		return &limits.Hold{ID: id("req"), Amount: amount, Expires: base.Add(6 * time.Minute), Budgets: []limits.BudgetCounter{
			{Kind: "key", ID: key, Base: 100, Max: 1000},
			{Kind: "team", ID: team, Period: period, End: period.AddDate(0, 1, 0), Base: 0, Max: 10_000},
		}}
	}
	kc := limits.BudgetCounterName("key", key, time.Time{})
	tc := limits.BudgetCounterName("team", team, period)
	scope := limits.Scope{Kind: limits.KindKey, ID: key, RPM: 3}
	if d := admit(t, s, limits.AdmitRequest{Now: base, Scopes: []limits.Scope{scope}, Hold: hold(400)}); !d.Allowed {
		t.Fatalf("first hold refused: %+v", d)
	}
	if k, tm := h.Committed(t, kc), h.Committed(t, tc); k != 500 || tm != 400 {
		t.Fatalf("counters key %d team %d, want 500 (base 100 + 400) and 400", k, tm)
	}
	// 500 + 600 > 1000: refused by the key's budget; nothing written.
	d := admit(t, s, limits.AdmitRequest{Now: base, Scopes: []limits.Scope{scope}, Hold: hold(600)})
	if d.Allowed || d.Reason != limits.ReasonBudget || d.BlockedBudget == nil || d.BlockedBudget.Kind != "key" || d.Committed != 500 {
		t.Fatalf("over the key budget: %+v, want refused by the key's budget at 500", d)
	}
	wantCount(t, h, limits.KindKey, key, base, 1, 0)
	if tm := h.Committed(t, tc); tm != 400 {
		t.Fatalf("team counter %d after a refused hold, want 400", tm)
	}
	// Exactly to the limit; a base the counter already passed is ignored.
	if d := admit(t, s, limits.AdmitRequest{Now: base, Scopes: []limits.Scope{scope}, Hold: hold(500)}); !d.Allowed {
		t.Fatalf("hold up to max refused: %+v", d)
	}
	if k := h.Committed(t, kc); k != 1000 {
		t.Fatalf("key counter %d, want 1000", k)
	}
	// The RPM scope is full now (3 with the next): a rate-limited request
	// writes no hold.
	admit(t, s, limits.AdmitRequest{Now: base, Scopes: []limits.Scope{scope}})
	if d := admit(t, s, limits.AdmitRequest{Now: base, Scopes: []limits.Scope{scope}, Hold: hold(0)}); d.Allowed || d.Reason != limits.ReasonRPM {
		t.Fatalf("rpm full: %+v, want rpm", d)
	}
	if tm := h.Committed(t, tc); tm != 900 {
		t.Fatalf("team counter %d, want 900", tm)
	}
	// A hold whose base alone passes the budget is refused without a write.
	over := hold(1)
	over.Budgets[0].Base = 1000
	over.Budgets[0].ID = id("other")
	if d := admit(t, s, limits.AdmitRequest{Now: base, Hold: over}); d.Allowed || d.Reason != limits.ReasonBudget {
		t.Fatalf("base at max: %+v, want budget_exceeded", d)
	}
	if _, err := s.Admit(ctx(t), limits.AdmitRequest{Now: base, Hold: &limits.Hold{ID: "x", Amount: -1, Expires: base, Budgets: over.Budgets}}); err == nil {
		t.Fatal("a negative hold was accepted")
	}
}
