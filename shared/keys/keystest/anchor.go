package keystest

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// testAnchoredPeriods: a budget_duration of a number of days other than
// 1, 7 and 30 counts its periods from the midnight of the day it was set
// (Budget.Anchor), as LiteLLM's resets do; the anchor is stored exactly,
// on a key and on a team, and a spend after the anchored boundary starts
// a new period in the store.
func testAnchoredPeriods(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	anchor := time.Date(2031, 3, 4, 15, 4, 5, 123_000_000, time.UTC) // a Tuesday
	b := keys.Budget{MaxBudget: usd(1), Duration: "10d", Anchor: anchor}
	k := keys.Key{Hash: keys.HashSecret(id("sk")), CreatedAt: anchor, Settings: keys.Settings{Budget: b}}
	team := keys.Team{ID: id("team"), CreatedAt: anchor, Settings: keys.Settings{Budget: b}}
	if err := s.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTeam(c, team); err != nil {
		t.Fatal(err)
	}
	got, err := newStore(t).GetKey(c, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, k) {
		t.Fatalf("GetKey =\n%+v\nwant\n%+v", got, k)
	}
	start := time.Date(2031, 3, 4, 0, 0, 0, 0, time.UTC)
	reset := start.AddDate(0, 0, 10)
	if !got.ResetAt(anchor).Equal(reset) {
		t.Fatalf("budget_reset_at %v, want %v (the anchor's midnight plus 10 days)", got.ResetAt(anchor), reset)
	}
	refs := []keys.Ref{{Kind: keys.KindKey, ID: k.Hash}, {Kind: keys.KindTeam, ID: team.ID}}
	spend := func(at time.Time, nanos int64) {
		t.Helper()
		var ds []keys.SpendDelta
		for _, r := range refs {
			ds = append(ds, keys.SpendDelta{Ref: r, Nanos: nanos, At: at})
		}
		if _, err := s.ApplySpend(c, ds); err != nil {
			t.Fatal(err)
		}
	}
	spend(reset.Add(-time.Second), 1_000_000_000)
	spend(reset, 300_000_000)
	k2, _ := newStore(t).GetKey(c, k.Hash)
	t2, _ := newStore(t).GetTeam(c, team.ID)
	for name, bu := range map[string]keys.Budget{"key": k2.Budget, "team": t2.Budget} {
		if !bu.PeriodStart.Equal(reset) || keys.Nanos(bu.PeriodSpend) != 300_000_000 || bu.Exceeded(reset) {
			t.Errorf("%s: period %v spend %v; want a new period at %v with 0.3", name, bu.PeriodStart, bu.PeriodSpend, reset)
		}
	}
}
