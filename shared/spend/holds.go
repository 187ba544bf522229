package spend

import (
	"time"
)

// Hold is the strict-budget reservation a request made in its admission
// (limits.Hold): Amount nano-USD on each of Counters, released by the
// sweeper after Expires if no event settles it first. Recording the event
// settles it exactly once: the hold is deleted and each counter gets
// (real cost - Amount); if the sweeper released it already, the counters
// get the real cost.
//
// JSON: "hold":{"amount":123,"expires":"<RFC 3339, ns>","counters":["bud#key#<hash>#<period>",...]}
type Hold struct {
	Amount   int64
	Expires  time.Time
	Counters []string
}

// MaxHoldCounters bounds Hold.Counters (key, team, user, member, end user).
const MaxHoldCounters = 5

type wireHold struct {
	Amount   int64     `json:"amount"`
	Expires  time.Time `json:"expires"`
	Counters []string  `json:"counters"`
}

func (h *Hold) wire() *wireHold {
	if h == nil {
		return nil
	}
	return &wireHold{Amount: h.Amount, Expires: h.Expires.UTC(), Counters: h.Counters}
}

func (w *wireHold) hold() *Hold {
	if w == nil {
		return nil
	}
	return &Hold{Amount: w.Amount, Expires: w.Expires, Counters: w.Counters}
}

func (h *Hold) validate(rid string) error {
	switch {
	case h.Amount < 0:
		return invalid("request %s: hold of a negative amount", short(rid))
	case h.Expires.IsZero():
		return invalid("request %s: hold without an expiry", short(rid))
	case len(h.Counters) == 0 || len(h.Counters) > MaxHoldCounters:
		return invalid("request %s: hold on %d counters (1..%d)", short(rid), len(h.Counters), MaxHoldCounters)
	}
	for _, c := range h.Counters {
		if c == "" || len(c) > 2*MaxIDLen+64 {
			return invalid("request %s: hold counter name of %d bytes", short(rid), len(c))
		}
	}
	return nil
}

// HoldLedger settles holds in the memory store (limits.Ledger).
type HoldLedger interface {
	// Settle replaces request id's reservation with its real cost, once.
	Settle(id string, counters []string, real int64) (held bool)
}

// SettleHolds makes m settle the holds of the events it records on l (the
// memory limits store's ledger), under the same lock as the rest of the
// recording: exactly once per event.
func (m *Memory) SettleHolds(l HoldLedger) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holds = l
}

// settle settles e's hold; m.mu is held and e is recorded now.
func (m *Memory) settle(e *Event) {
	if e.Hold != nil && m.holds != nil {
		m.holds.Settle(e.RequestID, e.Hold.Counters, e.Nanos())
	}
}
