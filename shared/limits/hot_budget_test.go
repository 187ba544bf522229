package limits

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A hot budget's shard caps add up to max_budget exactly, whatever the
// shards and the base, also when max_budget was lowered below the base.
func TestBudgetCapsAddUp(t *testing.T) {
	for _, n := range []int{2, 3, 7, 16, 64} {
		for _, base := range []int64{0, 5, 999_999_999, 2_000_000_000} {
			for _, maxB := range []int64{0, 1, 63, 1_000_000_000, 1_000_000_007} {
				st := &budgetState{shards: n, base: base}
				b := &BudgetCounter{Max: maxB}
				var sum int64
				for i := range n {
					sum += st.capOf(b, i)
				}
				if sum != maxB {
					t.Errorf("%d shards, base %d, max %d: caps add up to %d", n, base, maxB, sum)
				}
			}
		}
	}
}

func TestBudgetShards(t *testing.T) {
	const a = 1_000_000
	for _, tt := range []struct {
		writes     float64
		rate, room int64
		want       int
	}{
		{1000, 10, 1_000_000 * a, 16},   // the floor
		{1000, 5000, 1_000_000 * a, 64}, // a very fast instance: at most MaxShards
		{20, 33, 3000 * a, 27},          // a slow partition: more shards
		{40, 4, 100 * a, 3},             // the tail: room / (BudgetTail x amount)
		{1000, 10, 63 * a, 1},           // too small to split: stays cold
	} {
		if got := BudgetShards(tt.writes, tt.rate, tt.room, a); got != tt.want {
			t.Errorf("BudgetShards(%v, %d, %d, %d) = %d, want %d", tt.writes, tt.rate, tt.room, a, got, tt.want)
		}
	}
}

// pick leaves the shards seen short of the reservation, refuses when all
// are, with what they hold as committed, and once that view is stale
// points at the shard seen longest ago, to be read.
func TestBudgetPick(t *testing.T) {
	st := &budgetState{shards: 4, base: 100}
	b := &BudgetCounter{Max: 500} // caps 200, 100, 100, 100
	now := time.Now()
	for i, room := range []int64{5, 0, 20, 50} {
		b.Shard, b.Cap = i, st.capOf(b, i)
		st.short(b, b.Cap-room, now.Add(time.Duration(i)*time.Millisecond))
	}
	if _, ok, _ := st.pick(b, 30, now, true); !ok || b.Shard != 3 || b.Cap != 100 || b.Shards != 4 {
		t.Fatalf("pick(30) = shard %d cap %d ok %v, want shard 3 (room 50), cap 100", b.Shard, b.Cap, ok)
	}
	if c, ok, _ := st.pick(b, 60, now, true); ok || c != 500-75 {
		t.Fatalf("pick(60) = %d, %v; want refused with 425 committed", c, ok)
	}
	later := now.Add(budgetSeen + time.Second)
	if _, ok, read := st.pick(b, 60, later, true); !ok || !read || b.Shard != 0 {
		t.Fatalf("stale pick(60) = shard %d ok %v read %v, want shard 0 (seen longest ago) to read", b.Shard, ok, read)
	}
	if _, ok, read := st.pick(b, 60, later, false); ok || read {
		t.Fatalf("stale pick(60) without reads = ok %v read %v, want refused", ok, read)
	}
}

// budgetStore is a Backend and BudgetTaker over budget counters in
// memory, with ddblimits' conditions (a cold reservation refused by a
// counter turned hot, a shard's cap), that throttles a counter item's
// reservations past coldMax, as an item at its write ceiling does.
type budgetStore struct {
	mu      sync.Mutex
	c       map[string]int64
	hot     map[string][2]int64 // shards, base
	writes  map[string]int64
	coldMax int64
}

func (f *budgetStore) Attempt(_ context.Context, p *Plan) (Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := p.Req.Hold
	ht := &HoldThrottled{Err: ErrThrottled}
	for i, b := range h.Budgets {
		if f.writes[b.Counter()]++; f.writes[b.Counter()] > f.coldMax && b.Shards == 0 {
			ht.Budgets = append(ht.Budgets, i)
		}
	}
	if len(ht.Budgets) > 0 {
		return Outcome{}, ht
	}
	for i, b := range h.Budgets {
		base := BudgetCounter{Kind: b.Kind, ID: b.ID, Period: b.Period}.Counter()
		hot, isHot := f.hot[base]
		c, ok := f.c[b.Counter()]
		if !ok && b.Shard == 0 {
			c = b.Base
		}
		switch {
		case b.Shards == 0 && isHot:
			out := BlockedByBudget(i, c)
			out.HotShards, out.HotBase = int(hot[0]), hot[1]
			return out, nil
		case b.Shards == 0 && c+h.Amount > b.Max, b.Shards > 0 && c+h.Amount > b.Cap:
			return BlockedByBudget(i, c), nil
		}
	}
	for _, b := range h.Budgets {
		if _, ok := f.c[b.Counter()]; !ok && b.Shard == 0 {
			f.c[b.Counter()] = b.Base
		}
		f.c[b.Counter()] += h.Amount
	}
	return AllowedOutcome, nil
}

func (f *budgetStore) SwitchBudget(_ context.Context, b BudgetCounter, shards int) (int, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := b.Counter()
	if _, ok := f.hot[name]; !ok {
		if _, ok := f.c[name]; !ok {
			f.c[name] = b.Base
		}
		f.hot[name] = [2]int64{int64(shards), f.c[name]}
	}
	return int(f.hot[name][0]), f.hot[name][1], nil
}

func (f *budgetStore) ReadBudget(_ context.Context, b BudgetCounter) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.c[b.Counter()], nil
}

// Two admitters (instances) of 32 goroutines each reserve on one key's
// budget whose counter throttles after 50 reservations: it turns hot (the
// second instance learns it from the counter), the shards together hold
// exactly what was admitted and never more than the budget, and what is
// left unreserved is less than one reservation per shard.
func TestHotBudgetExact(t *testing.T) {
	f := &budgetStore{c: map[string]int64{}, hot: map[string][2]int64{}, writes: map[string]int64{}, coldMax: 50}
	const amount, budget = 1000, 5000 * 1000
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		a := &Admitter{Backend: f}
		for range 32 {
			wg.Go(func() {
				for {
					h := &Hold{ID: "r", Amount: amount, Expires: time.Now().Add(time.Hour), Budgets: []BudgetCounter{{Kind: "key", ID: "k", Base: 1000, Max: budget}}}
					d, err := a.Admit(context.Background(), AdmitRequest{Now: time.Now(), Hold: h})
					if err != nil {
						t.Error(err)
						return
					}
					if !d.Allowed {
						return
					}
					admitted.Add(1)
				}
			})
		}
	}
	wg.Wait()
	base := BudgetCounterName("key", "k", time.Time{})
	hot := f.hot[base]
	var sum int64
	for i := range int(hot[0]) {
		sum += f.c[(&BudgetCounter{Kind: "key", ID: "k", Shard: i}).Counter()]
	}
	t.Logf("admitted %d, %d shards from base %d, counters hold %d", admitted.Load(), hot[0], hot[1], sum)
	if hot[0] < 2 {
		t.Fatal("the budget did not turn hot")
	}
	if sum != 1000+admitted.Load()*amount || sum > budget {
		t.Errorf("the shards hold %d: want the base 1000 plus %d admitted x %d, at most %d", sum, admitted.Load(), amount, budget)
	}
	if left := budget - sum; left >= hot[0]*amount {
		t.Errorf("%d left unreserved: more than the tail of one reservation per shard (%d)", left, hot[0]*amount)
	}
}
