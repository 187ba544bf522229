package keystest

import (
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

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
