package limits

import (
	"context"
	"sync"
	"time"
)

// Memory is the in-process store for local mode and unit tests. All its
// checks and writes happen under one lock.
type Memory struct {
	admitter Admitter

	mu        sync.Mutex
	counters  map[memSlot]*memCounter
	lastSweep time.Time
	ledger    *Ledger
	leases    leases
}

type memSlot struct {
	Slot
	window int64 // unix seconds of the window start
}

type memCounter struct {
	req, tok int64
	expires  time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty memory store.
func NewMemory() *Memory {
	m := &Memory{counters: map[memSlot]*memCounter{}, ledger: newLedger(), leases: leases{}}
	m.admitter.Backend = memBackend{m}
	return m
}

// Admit implements Store.
func (m *Memory) Admit(ctx context.Context, req AdmitRequest) (Decision, error) {
	return m.admitter.Admit(ctx, req)
}

// Ledger returns the store's strict-budget counters and holds, which the
// memory spend store settles and local mode's sweeper releases.
func (m *Memory) Ledger() *Ledger { return m.ledger }

// AdjustTokens implements Store.
func (m *Memory) AdjustTokens(ctx context.Context, a Admission, delta int64) error {
	if delta == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range a.Slots {
		m.counter(memSlot{s, a.Window.Unix()}, a.Window.Add(time.Minute+CounterTTL)).tok += delta
	}
	return nil
}

// Count returns the requests and tokens counted for a scope's shard in the
// window holding now (tests and introspection).
func (m *Memory) Count(kind Kind, id string, shard int, now time.Time) (requests, tokens int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.counters[memSlot{Slot{kind, id, shard}, WindowStart(now).Unix()}]; ok {
		return c.req, c.tok
	}
	return 0, 0
}

func (m *Memory) counter(k memSlot, expires time.Time) *memCounter {
	c, ok := m.counters[k]
	if !ok {
		c = &memCounter{expires: expires}
		m.counters[k] = c
	}
	return c
}

// sweep drops counters whose windows ended long ago (at most once a minute).
func (m *Memory) sweep(now time.Time) {
	if now.Sub(m.lastSweep) < time.Minute {
		return
	}
	m.lastSweep = now
	for k, c := range m.counters {
		if now.After(c.expires) {
			delete(m.counters, k)
		}
	}
}

type memBackend struct{ m *Memory }

func (b memBackend) Attempt(ctx context.Context, p *Plan) (Outcome, error) {
	m := b.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(p.Req.Now)
	w := p.Window.Unix()
	for i, it := range p.Items {
		if it.Lease {
			if m.leases.live(it.Slot, p.Req.Now) >= it.ParCap {
				return BlockedByItem(i, ReasonParallel), nil
			}
			continue
		}
		var req, tok int64
		if c, ok := m.counters[memSlot{it.Slot, w}]; ok {
			req, tok = c.req, c.tok
		}
		if r := it.RoomFor(req, tok, p.Req.Tokens); r != "" {
			return BlockedByItem(i, r), nil
		}
	}
	if h := p.Req.Hold; h != nil {
		if i, c := m.ledger.reserve(h); i >= 0 {
			return BlockedByBudget(i, c), nil
		}
	}
	for _, it := range p.Items {
		if it.Lease {
			m.leases.take(it.Slot, p.Req.Lease, p.Req.LeaseExpires)
			continue
		}
		c := m.counter(memSlot{it.Slot, w}, p.Expires)
		c.req++
		c.tok = AddSat(c.tok, p.Req.Tokens)
	}
	return AllowedOutcome, nil
}
