package spendtest

import (
	"context"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/spend"
)

// Strict is what the strict-budget tests need besides the store: the
// admission side (limits) and the sweeper on the same state.
type Strict struct {
	// Limits returns another limits store on the same state (another
	// gateway instance).
	Limits func(t *testing.T) limits.Store
	// Sweeper releases the holds expired at a time.
	Sweeper limits.HoldSweeper
	// Committed reads a budget counter.
	Committed func(t *testing.T, counter string) int64
	// OpenHolds counts the holds not yet settled or released.
	OpenHolds func(t *testing.T) int
}

var strictNow = time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)

func budgetKey(t *testing.T, ks keys.Admin, maxUSD float64) keys.Key {
	t.Helper()
	k := keys.Key{Hash: keys.HashSecret(ID("sk")), Alias: ID("strict"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &maxUSD}}}
	if err := ks.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return k
}

func heldEvent(k *keys.Key, h *limits.Hold, cost int64, status spend.Status) spend.Event {
	e := Event(k, "", strictNow, cost)
	e.RequestID, e.Status = h.ID, status
	e.Hold = h
	return e
}

func keyHold(k *keys.Key, amount int64) *limits.Hold {
	return &limits.Hold{
		ID: ID("req"), Amount: amount, Expires: strictNow.Add(6 * time.Minute),
		Budgets: []limits.BudgetCounter{{Kind: string(keys.KindKey), ID: k.Hash, Base: 0, Max: keys.Nanos(*k.MaxBudget)}},
	}
}

// testNeverOverBudget: 8 clients x 64 goroutines admit holds on one key's
// budget and settle them (through 8 consumers, in batches) with random real
// costs no larger than the reservation; one in ten "crashes" and sends no
// event, and the sweeper releases it. The key's recorded spend never
// passes max_budget, and once everything is settled the counter equals it.
func testNeverOverBudget(t *testing.T, h Harness) {
	s := h.Strict
	const (
		clients    = 8
		goroutines = 64
		reserve    = 10_000_000 // $0.01 a request
	)
	k := budgetKey(t, h.Keys, 1.0) // $1: 100 concurrent reservations at most
	maxN := keys.Nanos(*k.MaxBudget)
	c := ctx(t)
	events := make(chan spend.Event, clients*goroutines)
	var admitted, refused, crashed, recordErrs atomic.Int64
	var recorders sync.WaitGroup
	for i := range clients {
		st := h.Other(t)
		recorders.Add(1)
		go func() {
			defer recorders.Done()
			batch := make([]spend.Event, 0, 25)
			flush := func() {
				for len(batch) > 0 {
					if _, err := st.Record(c, batch); err != nil {
						recordErrs.Add(1)
						if c.Err() != nil {
							return
						}
						continue
					}
					batch = batch[:0]
				}
			}
			for e := range events {
				batch = append(batch, e)
				if len(batch) == cap(batch) || len(events) == 0 {
					flush()
				}
			}
			flush()
			_ = i
		}()
	}
	var wg sync.WaitGroup
	for range clients {
		ls := s.Limits(t)
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := mrand.New(mrand.NewPCG(mrand.Uint64(), 1))
				misses := 0
				for misses < 3 && c.Err() == nil {
					hold := keyHold(&k, reserve)
					d, err := ls.Admit(c, limits.AdmitRequest{Now: strictNow, Hold: hold})
					if err != nil {
						t.Errorf("Admit: %v", err)
						return
					}
					if !d.Allowed {
						if d.Reason != limits.ReasonBudget {
							t.Errorf("refused for %s, want %s", d.Reason, limits.ReasonBudget)
						}
						refused.Add(1)
						misses++
						time.Sleep(time.Duration(5+r.IntN(20)) * time.Millisecond)
						continue
					}
					admitted.Add(1)
					if r.IntN(10) == 0 {
						crashed.Add(1) // no event: the sweeper releases it
						continue
					}
					status := spend.StatusSuccess
					cost := r.Int64N(reserve + 1)
					if r.IntN(10) == 0 {
						status, cost = spend.StatusDisconnected, cost/4
					}
					events <- heldEvent(&k, hold, cost, status)
				}
			}()
		}
	}
	wg.Wait()
	close(events)
	recorders.Wait()
	if n, err := s.Sweeper.SweepHolds(c, strictNow.Add(6*time.Minute+time.Millisecond)); err != nil {
		t.Fatalf("Sweep: %v", err)
	} else if int64(n) != crashed.Load() {
		t.Errorf("the sweeper released %d holds, want the %d crashed requests'", n, crashed.Load())
	}
	spent := keySpend(t, h, &k)
	committed := s.Committed(t, limits.BudgetCounterName(string(keys.KindKey), k.Hash, time.Time{}))
	t.Logf("%d admitted (%d crashed), %d refusals, %d record retries; spend $%s of $%s; counter $%s",
		admitted.Load(), crashed.Load(), refused.Load(), recordErrs.Load(), keys.DecimalUSD(spent), keys.DecimalUSD(maxN), keys.DecimalUSD(committed))
	if spent > maxN {
		t.Errorf("recorded spend %d nano-USD exceeds max_budget %d", spent, maxN)
	}
	if committed != spent {
		t.Errorf("counter = %d with no hold open, want the recorded spend %d", committed, spent)
	}
	if n := s.OpenHolds(t); n != 0 {
		t.Errorf("%d holds open after settlement and sweep", n)
	}
	if admitted.Load() <= 100 {
		t.Errorf("only %d admitted: settlements should have made room past 100 reservations", admitted.Load())
	}
}

// testRelease: a request that crashes (hold, no event) is released by the
// sweeper once its hold expires (the request's bound plus
// limits.HoldGrace), not before; a cancelled request releases through its
// own event (cost 0); an event that arrives after the sweeper released its
// hold adds its real cost; each hold is given back exactly once, however
// often the sweeper runs or the event is delivered.
func testRelease(t *testing.T, h Harness) {
	s := h.Strict
	k := budgetKey(t, h.Keys, 0.001) // 1,000,000 nano-USD
	counter := limits.BudgetCounterName(string(keys.KindKey), k.Hash, time.Time{})
	ls := s.Limits(t)
	c := ctx(t)
	admit := func(h *limits.Hold) bool {
		d, err := ls.Admit(c, limits.AdmitRequest{Now: strictNow, Hold: h})
		if err != nil {
			t.Fatal(err)
		}
		return d.Allowed
	}
	crash, cancel, late := keyHold(&k, 300_000), keyHold(&k, 300_000), keyHold(&k, 300_000)
	for _, hd := range []*limits.Hold{crash, cancel, late} {
		if !admit(hd) {
			t.Fatal("a hold within the budget was refused")
		}
	}
	if admit(keyHold(&k, 200_000)) {
		t.Fatal("a hold past the budget (900,000 reserved + 200,000 > 1,000,000) was admitted")
	}
	if got := s.Committed(t, counter); got != 900_000 {
		t.Fatalf("counter = %d, want 900000", got)
	}
	// The cancelled request's event: cost 0 gives its reservation back.
	if _, err := h.Store.Record(c, []spend.Event{heldEvent(&k, cancel, 0, spend.StatusDisconnected)}); err != nil {
		t.Fatal(err)
	}
	if got := s.Committed(t, counter); got != 600_000 {
		t.Fatalf("after the cancelled request: counter = %d, want 600000", got)
	}
	// Before expiry the sweeper leaves the holds alone.
	if n, err := s.Sweeper.SweepHolds(c, crash.Expires.Add(-time.Second)); err != nil || n != 0 {
		t.Fatalf("sweep before expiry: %d, %v; want 0", n, err)
	}
	// At expiry (plus one sweep interval at most) both open holds go.
	for range 2 {
		n, err := s.Sweeper.SweepHolds(c, crash.Expires.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if want := 2; n != want && n != 0 {
			t.Fatalf("sweep released %d, want %d then 0", n, want)
		}
	}
	if got := s.Committed(t, counter); got != 0 {
		t.Fatalf("after the sweep: counter = %d, want 0", got)
	}
	// The late event of a swept hold adds its real cost, once.
	ev := heldEvent(&k, late, 250_000, spend.StatusSuccess)
	for range 2 {
		if _, err := h.Other(t).Record(c, []spend.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Committed(t, counter); got != 250_000 {
		t.Fatalf("after the late event: counter = %d, want 250000", got)
	}
	if spent := keySpend(t, h, &k); spent != 250_000 {
		t.Fatalf("recorded spend %d, want 250000", spent)
	}
	if n := s.OpenHolds(t); n != 0 {
		t.Fatalf("%d holds open", n)
	}
	if !admit(keyHold(&k, 750_000)) || admit(keyHold(&k, 1)) {
		t.Fatal("the budget's room after settlement is not exactly max - spend")
	}
}

// testTriedHold: the events of requests whose admission got no answer (a
// 503) name the hold they tried. One was written (the answer was lost),
// one never was: recording the events releases the first and is a no-op
// for the second, in one batch; a redelivery and the sweeper change
// nothing after.
func testTriedHold(t *testing.T, h Harness) {
	s := h.Strict
	k := budgetKey(t, h.Keys, 0.001)
	counter := limits.BudgetCounterName(string(keys.KindKey), k.Hash, time.Time{})
	c := ctx(t)
	written, never := keyHold(&k, 400_000), keyHold(&k, 400_000)
	if d, err := s.Limits(t).Admit(c, limits.AdmitRequest{Now: strictNow, Hold: written}); err != nil || !d.Allowed {
		t.Fatalf("Admit = %+v, %v", d, err)
	}
	evs := []spend.Event{heldEvent(&k, written, 0, spend.StatusFailure), heldEvent(&k, never, 0, spend.StatusFailure)}
	for i := range evs {
		evs[i].StatusCode = 503
	}
	for range 2 { // the second time a redelivery
		if _, err := h.Store.Record(c, evs); err != nil {
			t.Fatal(err)
		}
		if got := s.Committed(t, counter); got != 0 {
			t.Fatalf("counter = %d after the tried holds' events, want 0", got)
		}
		if n := s.OpenHolds(t); n != 0 {
			t.Fatalf("%d holds open after the tried holds' events", n)
		}
	}
	if n, err := s.Sweeper.SweepHolds(c, written.Expires.Add(time.Minute)); err != nil || n != 0 {
		t.Fatalf("sweep: %d, %v; want nothing left to release", n, err)
	}
	if got := s.Committed(t, counter); got != 0 {
		t.Fatalf("counter = %d after the sweep, want 0", got)
	}
	if d, err := s.Limits(t).Admit(c, limits.AdmitRequest{Now: strictNow, Hold: keyHold(&k, 1_000_000)}); err != nil || !d.Allowed {
		t.Fatalf("the whole budget is not free again: %+v, %v", d, err)
	}
}

// RunStrict runs the strict-budget tests alone, on a harness whose
// admissions differ from the one Run is given (hot budget counters through
// a throttling proxy, ddbspend's hot test).
func RunStrict(t *testing.T, newHarness func(t *testing.T) Harness) {
	for name, fn := range map[string]func(*testing.T, Harness){
		"StrictNeverOverBudget": testNeverOverBudget, "StrictRelease": testRelease, "StrictTriedHold": testTriedHold,
	} {
		t.Run(name, func(t *testing.T) { fn(t, newHarness(t)) })
	}
}
