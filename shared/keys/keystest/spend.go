package keystest

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// testSpendPeriods: spend in a budget_duration period counts against the
// budget; the first spend after the boundary starts a new period; a late
// delta of an earlier period only adds to the lifetime spend.
func testSpendPeriods(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	h := keys.HashSecret(id("sk"))
	team := id("team")
	if err := s.CreateKey(c, keys.Key{Hash: h, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(1), Duration: "1d"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Teams().Create(c, keys.Team{ID: team, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(2)}}}); err != nil {
		t.Fatal(err)
	}
	kref, tref := keys.Ref{Kind: keys.KindKey, ID: h}, keys.Ref{Kind: keys.KindTeam, ID: team}
	day1 := time.Date(2031, 3, 4, 23, 59, 59, 0, time.UTC)
	day2 := time.Date(2031, 3, 5, 0, 0, 0, 0, time.UTC)
	apply := func(ds ...keys.SpendDelta) {
		t.Helper()
		if _, err := s.ApplySpend(c, ds); err != nil {
			t.Fatalf("ApplySpend: %v", err)
		}
	}
	apply(keys.SpendDelta{Ref: kref, Nanos: 600_000_000, At: day1}, keys.SpendDelta{Ref: tref, Nanos: 600_000_000, At: day1})
	apply(keys.SpendDelta{Ref: kref, Nanos: 400_000_000, At: day1}, keys.SpendDelta{Ref: tref, Nanos: 400_000_000, At: day1})
	k, err := newStore(t).GetKey(c, h)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Current(day1); got != 1 || !k.Exceeded(day1) {
		t.Fatalf("day 1: current %v, exceeded %v; want 1, true", got, k.Exceeded(day1))
	}
	// The boundary resets the budget exactly: no job, no write.
	if got := k.Current(day2); got != 0 || k.Exceeded(day2) {
		t.Fatalf("day 2 before any spend: current %v, exceeded %v; want 0, false", got, k.Exceeded(day2))
	}
	if !k.ResetAt(day1).Equal(day2) {
		t.Fatalf("ResetAt = %v, want %v", k.ResetAt(day1), day2)
	}
	apply(keys.SpendDelta{Ref: kref, Nanos: 250_000_000, At: day2})
	// A late event of day 1 adds to the lifetime spend only.
	apply(keys.SpendDelta{Ref: kref, Nanos: 5, At: day1})
	k, _ = newStore(t).GetKey(c, h)
	if keys.Nanos(k.Spend) != 1_250_000_005 || keys.Nanos(k.PeriodSpend) != 250_000_000 || !k.PeriodStart.Equal(day2) {
		t.Fatalf("after day 2: spend %v, period %v from %v; want 1.250000005, 0.25 from %v", k.Spend, k.PeriodSpend, k.PeriodStart, day2)
	}
	// Without a duration the lifetime spend is the budget's.
	tm, _ := newStore(t).GetTeam(c, team)
	if tm.Current(day2) != 1 || tm.Exceeded(day2) || !tm.PeriodStart.IsZero() {
		t.Fatalf("team: current %v exceeded %v period %v; want 1, false, none", tm.Current(day2), tm.Exceeded(day2), tm.PeriodStart)
	}
}

// testSoftBudget: crossing a soft budget is reported once per period.
func testSoftBudget(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	h := keys.HashSecret(id("sk"))
	if err := s.CreateKey(c, keys.Key{Hash: h, Settings: keys.Settings{Budget: keys.Budget{SoftBudget: usd(1), Duration: "7d"}}}); err != nil {
		t.Fatal(err)
	}
	ref := keys.Ref{Kind: keys.KindKey, ID: h}
	mon := time.Date(2031, 3, 3, 10, 0, 0, 0, time.UTC) // a Monday
	var reported []time.Time
	for _, at := range []time.Time{mon, mon.Add(time.Hour), mon.Add(2 * time.Hour), mon.AddDate(0, 0, 7), mon.AddDate(0, 0, 8)} {
		crossed, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: ref, Nanos: 700_000_000, At: at}})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(crossed, ref) {
			reported = append(reported, at)
		}
	}
	want := []time.Time{mon.Add(time.Hour), mon.AddDate(0, 0, 8)}
	if !slices.EqualFunc(reported, want, time.Time.Equal) {
		t.Fatalf("soft budget crossings reported at %v, want %v", reported, want)
	}
	k, _ := newStore(t).GetKey(c, h)
	if !k.SoftAlerted.Equal(time.Date(2031, 3, 10, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("SoftAlerted = %v, want the second week's start", k.SoftAlerted)
	}
}

// testEndUserPresence: HasEndUsers follows the end user records, so that
// the gateway can skip end-user lookups while there are none. The store is
// shared with other tests, so only the change this test makes is checked
// when other end users may exist.
func testEndUserPresence(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	before, err := s.HasEndUsers(c)
	if err != nil {
		t.Fatal(err)
	}
	e := id("customer")
	if err := s.EndUsers().Create(c, keys.EndUser{ID: e}); err != nil {
		t.Fatal(err)
	}
	if err := s.EndUsers().Create(c, keys.EndUser{ID: e}); err == nil {
		t.Fatal("second CreateEndUser succeeded")
	}
	if has, err := newStore(t).HasEndUsers(c); err != nil || !has {
		t.Fatalf("HasEndUsers after a create = %v, %v; want true", has, err)
	}
	if err := s.Delete(c, keys.Ref{Kind: keys.KindEndUser, ID: e}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(c, keys.Ref{Kind: keys.KindEndUser, ID: e}); err == nil {
		t.Fatal("second Delete of the end user succeeded")
	}
	if has, err := newStore(t).HasEndUsers(c); err != nil || has != before {
		t.Fatalf("HasEndUsers after the delete = %v, %v; want %v as before", has, err, before)
	}
}

// testRegeneratedKeySpend: spend still carrying a regenerated key's old
// hash (events in flight or redelivered) goes to the key it became, through
// a chain of regenerations; the old secrets stay invalid.
func testRegeneratedKeySpend(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	k := keys.Key{Hash: keys.HashSecret(id("sk")), Alias: id("alias"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(5), Duration: "30d"}}}
	if err := s.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	hashes := []string{k.Hash}
	for range 2 {
		nk := k
		nk.Hash = keys.HashSecret(id("sk"))
		if _, err := s.RegenerateKey(c, k.Hash, nk); err != nil {
			t.Fatal(err)
		}
		k = nk
		hashes = append(hashes, nk.Hash)
	}
	at := time.Now().UTC()
	ref := func(h string) keys.Ref { return keys.Ref{Kind: keys.KindKey, ID: h} }
	// Both old hashes and the new one in one call: all three land on one record.
	if _, err := s.ApplySpend(c, []keys.SpendDelta{
		{Ref: ref(hashes[0]), Nanos: 1_000, At: at},
		{Ref: ref(hashes[1]), Nanos: 20_000, At: at},
		{Ref: ref(hashes[2]), Nanos: 300_000, At: at},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := newStore(t).GetKey(c, k.Hash)
	if err != nil || keys.Nanos(got.Spend) != 321_000 || keys.Nanos(got.PeriodSpend) != 321_000 {
		t.Fatalf("regenerated key = %+v, %v; want spend 321000 nano-USD from its old hashes and its own", got, err)
	}
	for _, h := range hashes[:2] {
		if _, err := newStore(t).GetKey(c, h); !errors.Is(err, keys.ErrNotFound) {
			t.Errorf("old hash %.8s authenticates: %v", h, err)
		}
		if ks, err := s.ListKeys(c, keys.KeyFilter{}); err != nil || slices.ContainsFunc(ks, func(x keys.Key) bool { return x.Hash == h }) {
			t.Errorf("old hash %.8s listed: %v", h, err)
		}
	}
	// A deleted key takes nothing, through its old hashes either.
	if err := s.Delete(c, keys.Ref{Kind: keys.KindKey, ID: k.Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: ref(hashes[0]), Nanos: 5, At: at}}); err != nil {
		t.Fatalf("spend for a deleted key's old hash: %v", err)
	}
	// A key created again at an old hash (the same secret) is that key.
	again := keys.Key{Hash: hashes[1]}
	if err := s.CreateKey(c, again); err != nil {
		t.Fatalf("creating a key at a regenerated key's old hash: %v", err)
	}
	if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: ref(hashes[1]), Nanos: 7, At: at}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetKey(c, hashes[1]); err != nil || keys.Nanos(got.Spend) != 7 {
		t.Errorf("key created at an old hash = %+v, %v; want spend 7 nano-USD", got, err)
	}
}

// testModelMaxBudget: a key's model_max_budget is stored and read back;
// spend on a model it names is counted under the entry's name (the model
// as sent, or without its provider prefix), per period, alongside the
// key's own spend; spend on other models and on keys without the setting
// adds no per-model spend; updating the key's settings keeps the spend.
func testModelMaxBudget(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	h, plain := keys.HashSecret(id("sk")), keys.HashSecret(id("sk"))
	mb := map[string]keys.ModelBudget{
		"gpt-4o":     {Limit: 1_000_000_000, Period: "1d"},
		"claude #1!": {Limit: 5, Period: ""}, // any name: it is written through expression attribute names
	}
	// The key's own budget has a period too: a new day changes both in one update.
	if err := s.CreateKey(c, keys.Key{Hash: h, Settings: keys.Settings{ModelMaxBudget: mb, Budget: keys.Budget{Duration: "1d"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateKey(c, keys.Key{Hash: plain}); err != nil {
		t.Fatal(err)
	}
	k, err := newStore(t).GetKey(c, h)
	if err != nil || !maps.Equal(k.ModelMaxBudget, mb) || k.ModelSpend != nil {
		t.Fatalf("GetKey = %+v, %v; want model_max_budget %v and no model spend", k.ModelMaxBudget, err, mb)
	}
	ref := keys.Ref{Kind: keys.KindKey, ID: h}
	day1 := time.Date(2031, 3, 4, 23, 0, 0, 0, time.UTC)
	day2 := day1.Add(2 * time.Hour)
	apply := func(ds ...keys.SpendDelta) {
		t.Helper()
		if _, err := newStore(t).ApplySpend(c, ds); err != nil {
			t.Fatalf("ApplySpend: %v", err)
		}
	}
	apply(keys.SpendDelta{Ref: ref, Nanos: 600_000_000, At: day1, Model: "gpt-4o"},
		keys.SpendDelta{Ref: ref, Nanos: 3, At: day1, Model: "claude #1!"},
		keys.SpendDelta{Ref: keys.Ref{Kind: keys.KindKey, ID: plain}, Nanos: 7, At: day1, Model: "gpt-4o"})
	apply(keys.SpendDelta{Ref: ref, Nanos: 400_000_000, At: day1, Model: "openai/gpt-4o"}, // the entry without the prefix
		keys.SpendDelta{Ref: ref, Nanos: 9, At: day1, Model: "other"}, // no entry: the key's spend only
		keys.SpendDelta{Ref: ref, Nanos: 2, At: day1, Model: "claude #1!"})
	k, _ = newStore(t).GetKey(c, h)
	want := map[string]keys.ModelSpend{
		"gpt-4o":     {PeriodStart: time.Date(2031, 3, 4, 0, 0, 0, 0, time.UTC), Spend: 1_000_000_000},
		"claude #1!": {Spend: 5},
	}
	if !maps.Equal(k.ModelSpend, want) || keys.Nanos(k.Spend) != 1_000_000_014 {
		t.Fatalf("after day 1: model spend %+v, spend %v; want %+v and 1.000000014", k.ModelSpend, k.Spend, want)
	}
	if _, _, spent, over := k.ModelBudgetExceeded("gpt-4o", day1); !over || spent != 1_000_000_000 {
		t.Fatalf("gpt-4o at day 1: spent %d, exceeded %v; want 1e9, true", spent, over)
	}
	if _, _, _, over := k.ModelBudgetExceeded("other", day1); over {
		t.Fatal("a model with no entry is exceeded")
	}
	if _, _, spent, over := k.ModelBudgetExceeded("gpt-4o", day2); over || spent != 0 {
		t.Fatalf("gpt-4o at day 2 before any spend: spent %d, exceeded %v; want 0, false", spent, over)
	}
	if p, _ := newStore(t).GetKey(c, plain); p.ModelSpend != nil {
		t.Fatalf("a key with no model_max_budget has model spend %v", p.ModelSpend)
	}
	// Settings updates keep the spend; a new period starts the model over;
	// a late delta of an earlier period does not touch it.
	k.Alias = id("alias")
	if _, err := s.UpdateKey(c, k); err != nil {
		t.Fatal(err)
	}
	apply(keys.SpendDelta{Ref: ref, Nanos: 250, At: day2, Model: "gpt-4o"})
	apply(keys.SpendDelta{Ref: ref, Nanos: 1, At: day1, Model: "gpt-4o"})
	k, _ = newStore(t).GetKey(c, h)
	want["gpt-4o"] = keys.ModelSpend{PeriodStart: time.Date(2031, 3, 5, 0, 0, 0, 0, time.UTC), Spend: 250}
	if !maps.Equal(k.ModelSpend, want) || keys.Nanos(k.PeriodSpend) != 250 || !k.PeriodStart.Equal(want["gpt-4o"].PeriodStart) {
		t.Fatalf("after day 2: model spend %+v, key period spend %v from %v; want %+v and 250 nano-USD", k.ModelSpend, k.PeriodSpend, k.PeriodStart, want)
	}
	// A model added to model_max_budget later gets its own entry.
	k.ModelMaxBudget = maps.Clone(mb)
	k.ModelMaxBudget["other"] = keys.ModelBudget{Limit: 100, Period: "30d"}
	if _, err := s.UpdateKey(c, k); err != nil {
		t.Fatal(err)
	}
	apply(keys.SpendDelta{Ref: ref, Nanos: 11, At: day2, Model: "other"})
	k, _ = newStore(t).GetKey(c, h)
	want["other"] = keys.ModelSpend{PeriodStart: time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC), Spend: 11}
	if !maps.Equal(k.ModelSpend, want) {
		t.Fatalf("after a new entry: model spend %+v; want %+v", k.ModelSpend, want)
	}
}

// testConcurrentModelSpend: writers on several instances add to one key's
// per-model spend at once (first ones racing to create the map and the
// entries); the recorded spend is the exact sum.
func testConcurrentModelSpend(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	h := keys.HashSecret(id("sk"))
	mb := map[string]keys.ModelBudget{"a": {Limit: 1 << 40, Period: "30d"}, "b": {Limit: 1 << 40}}
	if err := s.CreateKey(c, keys.Key{Hash: h, Settings: keys.Settings{ModelMaxBudget: mb}}); err != nil {
		t.Fatal(err)
	}
	const instances, writers, each = 3, 4, 4
	var wg sync.WaitGroup
	for range instances {
		inst := newStore(t)
		for w := range writers {
			wg.Go(func() {
				model := []string{"a", "b"}[w%2]
				for range each {
					if _, err := inst.ApplySpend(c, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindKey, ID: h}, Nanos: 1_000_003, At: time.Now(), Model: model}}); err != nil {
						t.Errorf("ApplySpend: %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	k, err := s.GetKey(c, h)
	half := int64(instances * writers / 2 * each * 1_000_003)
	if err != nil || k.ModelSpend["a"].Spend != half || k.ModelSpend["b"].Spend != half || keys.Nanos(k.Spend) != 2*half {
		t.Fatalf("model spend %+v, spend %v, %v; want %d on each and %d in all", k.ModelSpend, k.Spend, err, half, 2*half)
	}
}

// testAnchoredPeriods: a budget_duration of a number of days other than
// 1, 7 and 30 counts its periods from the midnight of the day it was set
// (Budget.Anchor), as LiteLLM's resets do (testKeyLifecycle checks it is
// stored exactly), on a key and on a team, and a spend after the anchored boundary starts
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
	if err := s.Teams().Create(c, team); err != nil {
		t.Fatal(err)
	}
	got, err := newStore(t).GetKey(c, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Anchor.Equal(anchor) {
		t.Fatalf("anchor %v, want %v", got.Anchor, anchor)
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

// testSetSpend: SetSpend sets a record's lifetime spend and, with a
// budget_duration, its current period's spend (what the budget checks
// read); spend added after it adds to it; a missing record is ErrNotFound.
func testSetSpend(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	now := time.Now()
	plain := keys.User{ID: id("user"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(5)}}}
	periodic := keys.User{ID: id("user"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(5), Duration: "30d"}}}
	for _, u := range []keys.User{plain, periodic} {
		if err := s.Users().Create(c, u); err != nil {
			t.Fatal(err)
		}
		r := keys.Ref{Kind: keys.KindUser, ID: u.ID}
		if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: r, Nanos: keys.Nanos(7), At: now}}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetUser(c, u.ID); !got.Exceeded(now) {
			t.Fatalf("user %s with spend 7 of 5 not over budget: %+v", u.Budget.Duration, got.Budget)
		}
		if err := s.SetSpend(c, r, 0, now); err != nil {
			t.Fatal(err)
		}
		got, err := newStore(t).GetUser(c, u.ID)
		if err != nil || got.Spend != 0 || got.Current(now) != 0 || got.Exceeded(now) {
			t.Fatalf("after SetSpend 0 (%q): %+v, %v", u.Budget.Duration, got.Budget, err)
		}
		if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: r, Nanos: keys.Nanos(1.5), At: now}}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetUser(c, u.ID); got.Spend != 1.5 || got.Current(now) != 1.5 {
			t.Fatalf("spend after SetSpend and 1.5 more (%q): %+v", u.Budget.Duration, got.Budget)
		}
		if err := s.SetSpend(c, r, keys.Nanos(2), now); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetUser(c, u.ID); got.Spend != 2 || got.Current(now) != 2 {
			t.Fatalf("after SetSpend 2 (%q): %+v", u.Budget.Duration, got.Budget)
		}
	}
	absent(t, "SetSpend of a missing user", s.SetSpend(c, keys.Ref{Kind: keys.KindUser, ID: id("nobody")}, 0, now))
}
