package spend

import (
	"context"
	"time"

	"github.com/sluice-gw/sluice/shared/limits"
)

// An event's Hold is the strict-budget reservation its request made in its
// admission (limits.Hold): recording the event settles it exactly once. Its
// JSON form carries what settlement needs, the amount, the expiry (the
// hold's key) and the names of its counters:
//
//	"hold":{"amount":123,"expires":"<RFC 3339, ns>","counters":["bud#key#<hash>#<period>",...]}
type wireHold struct {
	Amount   int64     `json:"amount"`
	Expires  time.Time `json:"expires"`
	Counters []string  `json:"counters"`
}

func holdWire(h *limits.Hold) *wireHold {
	if h == nil {
		return nil
	}
	return &wireHold{Amount: h.Amount, Expires: h.Expires.UTC(), Counters: h.Counters()}
}

// hold reads the wire form back as request rid's hold. A counter name that
// does not read back (limits.ParseBudgetCounter) is an invalid event.
func (w *wireHold) hold(rid string) (*limits.Hold, error) {
	if w == nil {
		return nil, nil
	}
	h := &limits.Hold{ID: rid, Amount: w.Amount, Expires: w.Expires, Budgets: make([]limits.BudgetCounter, len(w.Counters))}
	for i, c := range w.Counters {
		if len(c) > 2*MaxIDLen+64 {
			return nil, invalid("request %s: hold counter name of %d bytes", short(rid), len(c))
		}
		b, err := limits.ParseBudgetCounter(c)
		if err != nil {
			return nil, invalid("request %s: %v", short(rid), err)
		}
		h.Budgets[i] = b
	}
	return h, nil
}

// validateHold checks an event's hold: the request's own, and a valid one.
func (e *Event) validateHold() error {
	if e.Hold.ID != e.RequestID {
		return invalid("request %s: the hold of another request", short(e.RequestID))
	}
	if err := e.Hold.Validate(); err != nil {
		return invalid("request %s: %v", short(e.RequestID), err)
	}
	return nil
}

// HoldLedger is where the memory store settles holds and whence it
// sweeps them: the memory limits store's limits.Ledger.
type HoldLedger interface {
	limits.HoldSweeper
	// Settle replaces h's reservation with its real cost, once.
	Settle(h *limits.Hold, real int64) (held bool)
}

var _ limits.HoldSweeper = (*Memory)(nil)

// SettleHolds makes m settle the holds of the events it records on l (the
// memory limits store's ledger), under the same lock as the rest of the
// recording: exactly once per event. m's SweepHolds then sweeps l.
func (m *Memory) SettleHolds(l HoldLedger) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holds = l
}

// SweepHolds implements limits.HoldSweeper on the ledger m settles on
// (none: nothing to sweep).
func (m *Memory) SweepHolds(ctx context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	l := m.holds
	m.mu.Unlock()
	if l == nil {
		return 0, nil
	}
	return l.SweepHolds(ctx, now)
}

// settle settles e's hold; m.mu is held and e is recorded now.
func (m *Memory) settle(e *Event) {
	if e.Hold != nil && m.holds != nil {
		m.holds.Settle(e.Hold, e.Nanos())
	}
}
