package spendtest

import (
	"context"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// testModelBudgetSpend: many goroutines on two consumer instances record
// the events of one key with a model_max_budget, each of them every event
// (all but the first copy redeliveries), in their own orders and batches; the key's spend on the
// budgeted model is exactly the sum of that model's events, recorded in
// the events' transactions (once each), and the other model gets no entry.
func testModelBudgetSpend(t *testing.T, h Harness) {
	c := ctx(t)
	k := keys.Key{Hash: keys.HashSecret(ID("sk")), Settings: keys.Settings{
		ModelMaxBudget: map[string]keys.ModelBudget{"gpt-4o": {Limit: 1 << 50}},
	}}
	if err := h.Keys.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	r := mrand.New(mrand.NewPCG(3, 4))
	evs := make([]spend.Event, 120)
	var want, total int64
	for i := range evs {
		e := Event(&k, "", now.Add(-time.Duration(r.IntN(600_000))*time.Millisecond), 1+r.Int64N(5_000_000))
		e.ModelGroup = []string{"gpt-4o", "gpt-4o-mini"}[r.IntN(2)]
		if e.ModelGroup == "gpt-4o" {
			want += e.Cost
		}
		total += e.Cost
		evs[i] = e
	}
	const workers = 6
	var wg sync.WaitGroup
	for i := range workers {
		st := h.Store
		if i%2 == 1 {
			st = h.Other(t)
		}
		mine := slices.Clone(evs) // every worker records every event: all but one copy are redeliveries
		rr := mrand.New(mrand.NewPCG(uint64(i), 7))
		rr.Shuffle(len(mine), func(a, b int) { mine[a], mine[b] = mine[b], mine[a] })
		wg.Go(func() { recordAll(c, t, st, mine, rr) })
	}
	wg.Wait()
	got, err := h.Keys.GetKey(c, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if s := got.ModelSpend["gpt-4o"]; s.Spend != want || !s.PeriodStart.IsZero() {
		t.Errorf("gpt-4o spend = %d from %v, want %d (the lifetime)", s.Spend, s.PeriodStart, want)
	}
	if _, ok := got.ModelSpend["gpt-4o-mini"]; ok || len(got.ModelSpend) != 1 {
		t.Errorf("model spend = %v, want gpt-4o only", got.ModelSpend)
	}
	if keys.Nanos(got.Spend) != total {
		t.Errorf("key spend = %v, want %d nano-USD", got.Spend, total)
	}
}

// recordAll records evs through st in random batches.
func recordAll(c context.Context, t *testing.T, st spend.Store, evs []spend.Event, r *mrand.Rand) {
	for len(evs) > 0 {
		n := min(len(evs), 1+r.IntN(30))
		if _, err := st.Record(c, evs[:n]); err != nil {
			t.Error(err)
			return
		}
		evs = evs[n:]
	}
}
