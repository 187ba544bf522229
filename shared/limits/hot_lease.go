package limits

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"time"
)

// Hot leases: a scope's lease item (parallel.go) whose write is
// throttled, or whose admissions on this instance pass HotRate(ItemWrites)
// a second with a bound of at least 2*LeaseShardMin, turns hot: its bound
// is split over shards 1..S, items of their own whose caps add up to the
// bound exactly, and each admission takes its lease on one shard with
// room, in the same single write or transaction as before (no extra call).
// The release goes back to the shard it came from: the admission's Leased
// slot names it (Slot.Shard), so any instance can release it, and a second
// release, or one after the expiry's reaping, still changes nothing (the
// shard's entry is gone).
//
// The switch is recorded in the scope's one lease item, shard 0
// (LeaseSharder.SwitchLeases: SET hot = S IF attribute_not_exists(hot),
// the item then kept past its TTL), and every cold admission's condition
// includes attribute_not_exists(hot), so an instance that has not learned
// it is refused and learns it from the refusal. Shard 0 admits nothing
// more: it holds only the leases taken before the switch (the legacy),
// which only go down (released, or reaped once expired). Shard i's cap is
// ShardCap(bound - legacy, S, i-1) with the legacy as this instance last
// read it: a stale reading is higher, so its caps are lower, never higher,
// than the exact ones. So the leases in force never exceed the bound,
// however many instances: shard 0 holds the legacy, the others at most
// their caps, which add up to the bound less a legacy at least as large.
//
// The shard count follows the rate the switching instance saw, or the
// throttling it met (LeaseShards). A layout is kept once chosen: moving
// leases in flight between layouts is not exact, so a scope, once hot,
// stays hot; at low rates that costs what a cold lease costs, one write to
// take and one to give back.
//
// An admission tries a shard known to have room: by the instance's last
// reading of every shard (LeaseSharder.ReadLeases: one strongly consistent
// batch read, no write unit; at most one per leaseReadEvery per scope and
// instance, which also reads the legacy again, raising the caps as it
// falls), as many tries as it had room, or by a lease the instance gave
// back there since; before the first reading, one not seen full. A shard
// is seen full by a refused write or by the reading. When no shard is
// known to have room, the admission reads them all (waiting for the
// reading to be due when the last one is younger than leaseReadEvery) and
// tries one with room; a refusal costs no write when none has. The tries
// of an instance between two readings are at most the room it read, so
// its requests do not pile onto the few shards with room. A throttled
// write is followed by a reading of the shards that starts after it, as
// hot budgets read a throttled shard (hot_budget.go): when the reading
// shows no shard with room, the request is refused (a parallel refusal,
// not an error: at a full bound the instances' tries meet on the few
// shards with room, and the crowd is refused rather than kept retrying
// until the admission's bound); when it shows the throttled shard full,
// the request moves on to one with room at once; otherwise it retries on
// another shard with room (this one when it is the only one) after a
// jittered backoff, within the admission's bound.
//
// The stated tail of false refusals: a hot lease is refused only after a
// reading of every shard that started after it found no room to try, or
// after its last try was throttled (each shard's leases in force at its
// cap, or its room taken by the instance's tries since), and the writes
// since found the shards it tried full; so what it can miss is what other
// instances gave back during that reading and its own tries (its own
// releases are tried first), or took of the room it read. Waiting for
// that reading adds at most leaseReadEvery and a read to a refusal or a
// throttled try.

// LeaseSharder is the part of a Backend hot leases need.
type LeaseSharder interface {
	// SwitchLeases turns slot's lease item (shard 0) hot over shards
	// shards, unless it is hot already; it returns its shards and the
	// leases it holds (the legacy) either way.
	SwitchLeases(ctx context.Context, slot Slot, shards int) (n int, legacy int64, err error)
	// ReadLeases reads a hot lease scope's items at now, strongly
	// consistent: legacy is the leases in force on shard 0, live[i] those
	// on shard i+1 (-1: not read).
	ReadLeases(ctx context.Context, slot Slot, shards int, now time.Time) (legacy int64, live []int64, err error)
}

// leaseReadEvery is the least time between two readings of a hot lease
// scope's shards by one instance.
const leaseReadEvery = 100 * time.Millisecond

// LeaseShardMin is the fewest leases a hot lease shard is given (on
// average): LeaseShards stays at or below bound/LeaseShardMin (at least 2),
// so that a shard is rarely full while the scope has room.
const LeaseShardMin = 8

// LeaseShards returns the shards a lease scope with this bound turns hot
// over, having seen rate admissions a second on this instance on a store
// whose items take itemWrites units a second: 16 units of an item's
// writes per admission (a transactional take and a release, 4 times over
// for the instances it does not see), at least 8, and 4 times that when it
// met throttling (the item's real ceiling may be far below itemWrites);
// at most MaxShards and bound/LeaseShardMin, at least 2.
func LeaseShards(bound, rate int64, itemWrites float64, throttled bool) int {
	if itemWrites <= 0 {
		itemWrites = WriteCeiling
	}
	n := max(int64(float64(16*rate)/itemWrites)+1, 8)
	if throttled {
		n *= 4
	}
	return int(max(min(n, MaxShards, bound/LeaseShardMin), 2))
}

// leaseHints is what an instance knows of a hot lease scope's shards
// (hotState.mu held).
type leaseHints struct {
	full    uint64           // shards (bit i: shard i+1) seen full since the last reading
	room    [MaxShards]int32 // shard i+1's room at the last reading, plus leases given back since, less tries since
	readAt  time.Time        // when the last reading of the shards started
	reading bool             // one is in flight
}

// leaseEligible reports whether a lease scope may turn hot.
func leaseEligible(ls LeaseSharder, s Scope) bool { return ls != nil && s.Parallel >= 4 }

// leaseItem is the lease item of s in a plan: the scope's one item, or,
// hot, a shard this instance has not seen full (Shard 0 when none).
func (a *Admitter) leaseItem(s Scope) Item {
	it := Item{Scope: s, Shards: 1, Slot: Slot{Kind: s.Kind, ID: s.ID}, Lease: true, ParCap: s.Parallel}
	ls, _ := a.Backend.(LeaseSharder)
	if !leaseEligible(ls, s) {
		return it
	}
	st := a.leaseStates.state(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.count(time.Now())
	if st.shards > 0 {
		it.Shards = st.shards
		pickLease(st, &it, 0)
	}
	return it
}

// pickLease moves hot lease item it to a shard with room: one at random
// among those known to have room (by the last reading, or a lease this
// instance gave back), else among those not read yet and not seen full,
// but for shard avoid (a throttled one) while there is another. Shard 0:
// none (st.mu held).
func pickLease(st *hotState, it *Item, avoid int) {
	h := st.leases()
	room := it.Scope.Parallel - min(st.base, it.Scope.Parallel)
	var gave, free uint64
	for i := range st.shards {
		switch {
		case ShardCap(room, st.shards, i) == 0:
		case h.room[i] > 0:
			gave |= 1 << i
		case h.full&(1<<i) == 0:
			free |= 1 << i
		}
	}
	if avoid > 0 {
		if a := uint64(1) << (avoid - 1); (gave|free)&^a != 0 {
			gave, free = gave&^a, free&^a
		}
	}
	it.Slot.Shard, it.ParCap = 0, 0
	if gave == 0 && free == 0 {
		return
	}
	var i int
	if gave != 0 {
		i = pickBit(gave)
		if h.room[i]--; h.room[i] == 0 {
			h.full |= 1 << i // its room is tried: full until the next reading
		}
	} else {
		i = pickBit(free)
	}
	it.Slot.Shard, it.ParCap = i+1, ShardCap(room, st.shards, i)
}

// pickBit returns one of the set bits of free (not 0) at random.
func pickBit(free uint64) int {
	for k := rand.IntN(bits.OnesCount64(free)); k > 0; k-- {
		free &= free - 1
	}
	return bits.TrailingZeros64(free)
}

func (st *hotState) leases() *leaseHints {
	if st.lease == nil {
		st.lease = &leaseHints{}
	}
	return st.lease
}

// leasePrepare readies p's lease items before the first attempt: a cold
// one whose rate on this instance calls for it turns hot; a hot one with
// no shard to try reads the shards. It returns the index of a lease
// item with no room still (the request is refused without a write), or -1.
func (a *Admitter) leasePrepare(ctx context.Context, p *Plan) (int, error) {
	ls, _ := a.Backend.(LeaseSharder)
	for i := range p.Items {
		it := &p.Items[i]
		if !it.Lease || !leaseEligible(ls, it.Scope) {
			continue
		}
		if it.Shards <= 1 {
			st := a.leaseStates.state(it.Scope)
			st.mu.Lock()
			byRate := st.shards == 0 && a.ItemWrites > 0 && it.Scope.Parallel >= 2*LeaseShardMin && st.rate() >= HotRate(a.ItemWrites)
			st.mu.Unlock()
			if !byRate {
				continue
			}
			if err := a.switchLeases(ctx, ls, it.Scope, false); err != nil {
				return -1, err
			}
			*it = a.leaseItem(it.Scope)
		}
		if it.Slot.Shard == 0 {
			if ok, _ := a.readLeases(ctx, ls, it, p.Req.Now, 0); !ok {
				return i, nil
			}
		}
	}
	return -1, nil
}

// LeaseReleased tells the admitter that a lease of its instance was given
// back on slot: a hot shard with room, tried first.
func (a *Admitter) LeaseReleased(slot Slot) {
	if slot.Shard < 1 || slot.Shard > MaxShards {
		return
	}
	st := a.leaseStates.state(Scope{Kind: slot.Kind, ID: slot.ID})
	st.mu.Lock()
	defer st.mu.Unlock()
	if slot.Shard <= st.shards {
		h := st.leases()
		h.room[slot.Shard-1]++
	}
}

// switchLeases turns lease scope s hot (or learns it was), retrying a
// throttled write until ctx ends.
func (a *Admitter) switchLeases(ctx context.Context, ls LeaseSharder, s Scope, throttled bool) error {
	st := a.leaseStates.state(s)
	st.mu.Lock()
	want := LeaseShards(s.Parallel, st.rate(), a.ItemWrites, throttled)
	st.mu.Unlock()
	return a.untilUnthrottled(ctx, func() error {
		n, legacy, err := ls.SwitchLeases(ctx, Slot{Kind: s.Kind, ID: s.ID}, want)
		if err == nil {
			st.learnLeases(n, legacy)
		}
		return err
	})
}

// learnLeases records that a lease scope is hot over n shards, holding
// legacy leases on shard 0.
func (st *hotState) learnLeases(n int, legacy int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shards == 0 {
		st.shards, st.base = n, legacy
	}
	st.base = min(st.base, legacy) // it only falls
}

// leaseThrottled handles a throttled attempt's lease items: a cold one
// that may turn hot does; a hot one is followed by a reading of its
// shards that starts after the throttled try (reads take no write unit).
// When that reading shows no shard with room, the request is refused:
// blocked is the item (a parallel refusal, not an error: the crowd on the
// last places of a full bound is refused rather than kept retrying until
// its admission's bound). Otherwise the item moves to a shard with room,
// another than the throttled one while there is another; wait says the
// throttled shard had room still (or could not be read), so the caller
// backs off before the next try; a shard the reading shows full is left
// at once.
func (a *Admitter) leaseThrottled(ctx context.Context, p *Plan) (blocked int, wait bool, err error) {
	ls, _ := a.Backend.(LeaseSharder)
	for i := range p.Items {
		it := &p.Items[i]
		if !it.Lease || !leaseEligible(ls, it.Scope) {
			continue
		}
		st := a.leaseStates.state(it.Scope)
		if it.Shards <= 1 {
			st.mu.Lock()
			hot := st.shards > 0
			st.mu.Unlock()
			if !hot {
				if err := a.switchLeases(ctx, ls, it.Scope, true); err != nil {
					return -1, false, err
				}
			}
			*it = a.leaseItem(it.Scope)
			wait = true
			continue
		}
		st.mu.Lock()
		st.slow = min(st.slow+1, 4)
		st.lastThrott = time.Now()
		shard := it.Slot.Shard
		if shard > 0 {
			st.leases().room[shard-1]++ // not taken: the room is still there
		}
		st.mu.Unlock()
		ok, rerr := a.readLeases(ctx, ls, it, p.Req.Now, shard)
		switch {
		case rerr == nil && !ok:
			return i, false, nil
		case rerr != nil: // not read: the same shard or any, after a backoff
			st.mu.Lock()
			if shard == 0 {
				shard = 1 + rand.IntN(st.shards)
			}
			it.Slot.Shard = shard
			it.ParCap = ShardCap(it.Scope.Parallel-min(st.base, it.Scope.Parallel), st.shards, shard-1)
			st.mu.Unlock()
			wait = true
		default:
			st.mu.Lock()
			wait = wait || shard == 0 || it.Slot.Shard == shard || st.leases().room[shard-1] > 0
			st.mu.Unlock()
		}
	}
	return -1, wait, nil
}

// leaseRetries follows up an attempt refused by a lease item: it reaps the
// expired leases the item still counted, learns that the scope turned hot,
// or moves a hot lease to another shard, and tries again, until the lease
// is taken, refused for good, or ctx ends.
func (a *Admitter) leaseRetries(ctx context.Context, p *Plan, out Outcome, err error) (Outcome, error) {
	ls, _ := a.Backend.(LeaseSharder)
	reaps := 0
	for try := 0; ; try++ {
		if errors.Is(err, ErrThrottled) && try > 0 { // counted by the backend
			blocked, wait, lerr := a.leaseThrottled(ctx, p)
			switch {
			case lerr != nil:
				return out, lerr
			case blocked >= 0:
				return BlockedByItem(blocked, ReasonParallel), nil
			}
			if wait || !leasesOnly(p) {
				if berr := backoff(ctx, try, err); berr != nil {
					return out, berr
				}
			}
		} else if err != nil || out.Allowed || out.Item < 0 || !p.Items[out.Item].Lease {
			return out, err
		} else {
			it := &p.Items[out.Item]
			switch {
			case len(out.Stale) > 0 || out.Retry:
				if reaps++; reaps > maxReaps {
					return out, nil
				}
				it.Reap = out.Stale
			case out.HotShards > 0 && ls != nil:
				a.leaseStates.state(it.Scope).learnLeases(out.HotShards, out.HotBase)
				*it = a.leaseItem(it.Scope)
			case it.Shards > 1 && it.Slot.Shard > 0:
				it.Reap = nil
				if !a.leaseShardFull(ctx, ls, it, p.Req.Now) {
					return out, nil
				}
			default:
				return out, nil
			}
		}
		if i, err := a.leasePrepare(ctx, p); err != nil || i >= 0 {
			if err != nil {
				return out, err
			}
			return BlockedByItem(i, ReasonParallel), nil
		}
		out, err = a.attemptHold(ctx, p)
	}
}

// leaseShardFull marks it's shard full and moves it to another; false:
// none has room, even after reading them again.
func (a *Admitter) leaseShardFull(ctx context.Context, ls LeaseSharder, it *Item, now time.Time) bool {
	st := a.leaseStates.state(it.Scope)
	st.mu.Lock()
	if i := it.Slot.Shard - 1; i < st.shards {
		h := st.leases()
		h.full, h.room[i] = h.full|1<<i, 0
	}
	pickLease(st, it, 0)
	st.mu.Unlock()
	if it.Slot.Shard > 0 {
		return true
	}
	ok, _ := a.readLeases(ctx, ls, it, now, 0)
	return ok
}

// readLeases moves hot lease item it to a shard with room (another than
// avoid while there is another) by a reading of its scope's shards that
// starts after the call: its own, or one that another request of the
// instance starts meanwhile (at most one per leaseReadEvery; it waits for
// it, within ctx). A reading updates the legacy and which shards are
// full; false: none has room, or (err) none was read.
func (a *Admitter) readLeases(ctx context.Context, ls LeaseSharder, it *Item, now time.Time, avoid int) (bool, error) {
	st := a.leaseStates.state(it.Scope)
	h := st.leases()
	asked := time.Now()
	for {
		st.mu.Lock()
		if !h.reading && h.readAt.After(asked) { // read since: its answer
			pickLease(st, it, avoid)
			st.mu.Unlock()
			return it.Slot.Shard > 0, nil
		}
		wait := leaseReadEvery - time.Since(h.readAt)
		if !h.reading && wait <= 0 {
			break // st.mu held: this call reads
		}
		st.mu.Unlock()
		t := time.NewTimer(min(max(wait, time.Millisecond), 5*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return false, fmt.Errorf("%w: waiting for a reading of the lease shards: %w", ErrUnavailable, ctx.Err())
		case <-t.C:
		}
	}
	h.reading, h.readAt = true, time.Now()
	n := st.shards
	st.mu.Unlock()
	legacy, live, err := ls.ReadLeases(ctx, Slot{Kind: it.Scope.Kind, ID: it.Scope.ID}, n, now)
	st.mu.Lock()
	defer st.mu.Unlock()
	h.reading = false
	if err != nil {
		return false, err
	}
	st.base = min(st.base, legacy) // it only falls: a reading older than another is never lower
	room := it.Scope.Parallel - min(st.base, it.Scope.Parallel)
	for i, l := range live {
		switch c := ShardCap(room, st.shards, i); {
		case i >= st.shards || l < 0:
		case l >= c:
			h.full, h.room[i] = h.full|1<<i, 0
		default: // as many tries as it has room for, until the next reading
			h.full, h.room[i] = h.full&^(1<<i), int32(c-l)
		}
	}
	pickLease(st, it, avoid)
	return it.Slot.Shard > 0, nil
}

// leasesOnly reports whether p writes lease items only (a throttled one
// is all a throttling of p can be).
func leasesOnly(p *Plan) bool {
	for _, it := range p.Items {
		if !it.Lease {
			return false
		}
	}
	return p.Req.Hold == nil
}

// RetryThrottled runs write (a lease's release, say) until DynamoDB does
// not throttle it, counting each throttled attempt (Throttled) and
// backing off between them until ctx ends.
func (a *Admitter) RetryThrottled(ctx context.Context, write func() error) error {
	return a.untilUnthrottled(ctx, write)
}
