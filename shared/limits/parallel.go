package limits

import (
	"context"
	"time"
)

// Parallel-request limits (max_parallel_requests) bound a scope's requests
// in flight across every instance. A request takes a lease on each bounded
// scope in its admission, in the same atomic write as its per-minute
// counters and hold (no extra round trip), and gives it back with Release
// after its response (one write per leased scope, off the client's path,
// like the TPM correction).
//
// A scope's lease item holds a count n and one entry per lease: its id and
// its expiry (the request's timeout). The admission adds its entry and 1
// to n on the condition n < Parallel; Release removes the entry and
// subtracts 1 on the condition that the entry is still there, so a second
// release, or a release after the lease was reaped, changes nothing. A
// lease that is never released (its instance crashed) stops counting at
// its expiry: an admission refused by a full item learns its entries from
// the refusal (the DynamoDB store's ALL_OLD), and tries once more, removing
// the expired ones (on the condition that each is still there, unchanged)
// and lowering n by as many, in the same write as its own lease. So n is
// always the number of entries, an admission never takes n past the bound,
// and an expired lease blocks nobody: exact at every moment, with no
// sweeper. A scope whose lease item meets its write ceiling splits its
// bound over shards (hot_lease.go).

// StaleLease is an expired lease a lease item still counts.
type StaleLease struct {
	ID      string
	Expires int64 // unix ms, as stored
}

// MaxLeaseID bounds AdmitRequest.Lease (it is an attribute name in
// DynamoDB, and every in-flight request's lease is stored on the item).
const MaxLeaseID = 128

// LeaseGrace is what a lease outlives its request's bound by (the
// gateway's lease expiry), for clocks that differ between instances.
const LeaseGrace = 10 * time.Second

// maxReaps bounds the extra attempts of an admission refused by a lease
// item that still counted expired leases (or that changed meanwhile).
const maxReaps = 3

// LeaseExpired says whether a lease expiring at exp (unix ms) no longer
// counts at now.
func LeaseExpired(exp int64, now time.Time) bool { return exp <= now.UnixMilli() }

// leases are the memory store's lease items: scope -> lease id -> expiry.
type leases map[Slot]map[string]int64

// live counts the leases of slot still in force at now, dropping the
// expired ones.
func (l leases) live(slot Slot, now time.Time) int64 {
	m := l[slot]
	for id, exp := range m {
		if LeaseExpired(exp, now) {
			delete(m, id)
		}
	}
	return int64(len(m))
}

func (l leases) take(slot Slot, id string, exp time.Time) {
	m, ok := l[slot]
	if !ok {
		m = map[string]int64{}
		l[slot] = m
	}
	m[id] = exp.UnixMilli()
}

// Release implements Store.
func (m *Memory) Release(_ context.Context, a Admission) error {
	if len(a.Leased) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range a.Leased {
		if l, ok := m.leases[s]; ok {
			delete(l, a.Lease)
			if len(l) == 0 {
				delete(m.leases, s)
			}
		}
	}
	return nil
}

// InFlight returns the leases of a scope in force at now (tests and
// introspection).
func (m *Memory) InFlight(kind Kind, id string, now time.Time) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leases.live(Slot{Kind: kind, ID: id}, now)
}
