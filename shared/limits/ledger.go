package limits

import (
	"context"
	"sync"
	"time"
)

// Ledger is the memory store's strict-budget state: committed counters and
// open holds, under one lock. The memory limits store reserves on it (in
// its admissions), the memory spend store settles on it (Settle) and local
// mode's sweeper releases on it (SweepHolds), so that a hold is given back
// exactly once.
type Ledger struct {
	mu       sync.Mutex
	counters map[string]int64
	holds    map[string]ledgerHold
}

type ledgerHold struct {
	amount   int64
	counters []string
	expires  time.Time
}

var _ HoldSweeper = (*Ledger)(nil)

func newLedger() *Ledger {
	return &Ledger{counters: map[string]int64{}, holds: map[string]ledgerHold{}}
}

// Committed returns a counter's value and whether it exists.
func (l *Ledger) Committed(counter string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.counters[counter]
	return c, ok
}

// Holds returns the number of open holds.
func (l *Ledger) Holds() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.holds)
}

// Settle replaces h's reservation with its real cost: it deletes the hold
// and adds real - amount to each of its counters; when the hold is gone
// already (released by the sweeper, or never made: an admission that got
// no answer), it adds real to h's counters. The
// caller makes it once per request (the spend store's exactly-once).
func (l *Ledger) Settle(h *Hold, real int64) (held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, held = l.holds[h.ID]
	delete(l.holds, h.ID)
	for _, c := range h.Counters() {
		l.counters[c] += h.SettleDelta(real, !held)
	}
	return held
}

// SweepHolds releases the holds that expired at now and returns how many.
func (l *Ledger) SweepHolds(_ context.Context, now time.Time) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for id, h := range l.holds {
		if now.After(h.expires) {
			delete(l.holds, id)
			for _, c := range h.counters {
				l.counters[c] -= h.amount
			}
			n++
		}
	}
	return n, nil
}

// reserve commits h if every budget has room; otherwise it changes nothing
// and returns the index of the first budget without room and its counter's
// value (-1 when h was committed).
func (l *Ledger) reserve(h *Hold) (blocked int, committed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := h.Counters()
	values := make([]int64, len(names))
	for i, b := range h.Budgets {
		c, ok := l.counters[names[i]]
		if !ok {
			c = b.Base
		}
		if c+h.Amount > b.Max {
			return i, c
		}
		values[i] = c + h.Amount
	}
	for i, name := range names {
		l.counters[name] = values[i]
	}
	l.holds[h.ID] = ledgerHold{amount: h.Amount, counters: names, expires: h.Expires}
	return -1, 0
}
