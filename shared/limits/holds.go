package limits

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"
)

// Strict budgets (general_settings.strict_budgets).
//
// A request that some budget applies to reserves its worst-case cost with
// its admission: the admission carries a Hold, which adds Hold.Amount to a
// committed counter per budget (record and budget period) on the condition
// that the counter stays at or below the budget, and stores the hold itself,
// all in the same atomic write as the rate-limit counters. The counter
// starts at the record's period spend as the gateway read it (Budget.Base).
// The spend consumer settles the hold exactly once, in its recording
// transaction: it deletes the hold and adds (real cost - Amount) to each
// counter; if the hold is gone (released by the sweeper), it adds the real
// cost. A request that never sends its spend event (a crash) leaves its hold
// until Hold.Expires, when the sweeper deletes it and gives Amount back,
// exactly once against the consumer. So a counter is always at least the
// recorded spend of its period plus what is still reserved, and an
// admission never takes it past the budget: recorded spend never exceeds
// max_budget as long as a request's real cost never exceeds its
// reservation.

// Hold is the worst-case cost a request reserves against its budgets.
type Hold struct {
	ID      string          // the request id (x-litellm-call-id)
	Amount  int64           // nano-USD reserved on every budget
	Expires time.Time       // when the sweeper may release it: the request's bound plus the queue's redelivery window (gateway.HoldGrace)
	Budgets []BudgetCounter // each counter at most once
}

// BudgetCounter is the committed counter of one record's budget period.
type BudgetCounter struct {
	Kind   string    // the record's kind (keys.Kind: key, team, user, member, enduser)
	ID     string    // the record's id
	Period time.Time // start of the budget period; zero: a budget without budget_duration
	End    time.Time // end of the period (zero: none); the counter item's TTL follows it
	Base   int64     // nano-USD: the record's spend in the period as the gateway read it
	Max    int64     // nano-USD: max_budget
}

// Counter returns the counter's name, the partition key of its item in the
// counters table: "bud#<kind>#<id>#<period start, unix s>".
func (b BudgetCounter) Counter() string { return BudgetCounterName(b.Kind, b.ID, b.Period) }

// BudgetCounterName is the name of a record's counter for the period
// starting at period (zero: no budget_duration).
func BudgetCounterName(kind, id string, period time.Time) string {
	var p int64
	if !period.IsZero() {
		p = period.Unix()
	}
	return "bud#" + kind + "#" + id + "#" + strconv.FormatInt(p, 10)
}

// Counters returns the names of the hold's counters.
func (h *Hold) Counters() []string {
	out := make([]string, len(h.Budgets))
	for i, b := range h.Budgets {
		out[i] = b.Counter()
	}
	return out
}

// HoldShards is the number of partitions holds are spread over (one item
// takes ~1,000 writes/s; a hold costs a put and a delete).
const HoldShards = 32

// HoldKey returns the key of a hold's item in the spend table: pk
// "hold#<shard>" (shard = fnv32a(id) % HoldShards), sk "<expiry, unix ms,
// 13 digits>#<id>", so that the sweeper finds expired holds with one range
// query per shard.
func HoldKey(id string, expires time.Time) (pk, sk string) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return "hold#" + strconv.Itoa(int(h.Sum32()%HoldShards)), fmt.Sprintf("%013d#%s", expires.UnixMilli(), id)
}

// MaxHoldBudgets bounds Hold.Budgets: key, team, user, member, end user.
const MaxHoldBudgets = 5

func validateHold(h *Hold) error {
	switch {
	case h.ID == "":
		return fmt.Errorf("%w: hold without an id", ErrInvalid)
	case h.Amount < 0:
		return fmt.Errorf("%w: hold of a negative amount %d", ErrInvalid, h.Amount)
	case h.Expires.IsZero():
		return fmt.Errorf("%w: hold without an expiry", ErrInvalid)
	case len(h.Budgets) == 0 || len(h.Budgets) > MaxHoldBudgets:
		return fmt.Errorf("%w: hold on %d budgets (1..%d)", ErrInvalid, len(h.Budgets), MaxHoldBudgets)
	}
	seen := map[string]bool{}
	for _, b := range h.Budgets {
		c := b.Counter()
		if b.Kind == "" || b.ID == "" || b.Max < 0 || seen[c] {
			return fmt.Errorf("%w: hold budget %q", ErrInvalid, c)
		}
		seen[c] = true
	}
	return nil
}

// Ledger is the memory store's strict-budget state: committed counters and
// open holds, under one lock. The memory spend store settles holds through
// it (Settle) and local mode's sweeper releases them (Sweep), so that a
// hold is given back exactly once.
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

// Settle replaces request id's reservation with its real cost: it deletes
// the hold and adds real - amount to each of its counters; when the hold is
// gone already (released by Sweep), it adds real to counters, the
// counters the event names. The caller makes it once per request (the
// spend store's exactly-once).
func (l *Ledger) Settle(id string, counters []string, real int64) (held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.holds[id]; ok {
		delete(l.holds, id)
		for _, c := range h.counters {
			l.counters[c] += real - h.amount
		}
		return true
	}
	for _, c := range counters {
		l.counters[c] += real
	}
	return false
}

// Sweep releases the holds that expired at now and returns how many.
func (l *Ledger) Sweep(now time.Time) int {
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
	return n
}

// check returns the index of the first budget of h with no room, or -1.
// l.mu is held.
func (l *Ledger) check(h *Hold) (int, int64) {
	for i, b := range h.Budgets {
		c, ok := l.counters[b.Counter()]
		if !ok {
			c = b.Base
		}
		if c+h.Amount > b.Max {
			return i, c
		}
	}
	return -1, 0
}

// apply commits h; l.mu is held and check passed.
func (l *Ledger) apply(h *Hold) {
	names := h.Counters()
	for i, b := range h.Budgets {
		c, ok := l.counters[names[i]]
		if !ok {
			c = b.Base
		}
		l.counters[names[i]] = c + h.Amount
	}
	l.holds[h.ID] = ledgerHold{amount: h.Amount, counters: names, expires: h.Expires}
}
