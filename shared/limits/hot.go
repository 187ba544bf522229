package limits

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync"
	"time"
)

// Hot scopes: a request-only scope (RPM, no TPM, unsharded) whose one
// counter item meets its write ceiling is turned hot for the window: its
// counter is split over shards whose caps add up to the limit exactly,
// and each instance takes its requests from them in blocks: one
// conditional write takes up to a block of requests from one shard
// (Taker.Take: ADD req :n IF req <= cap - n), and the instance admits from
// its block without a call until it is used.
//
// The switch is recorded in the scope's one counter item of the window
// (Taker.Switch: SET hot = <shards>, base = req IF attribute_not_exists(hot)),
// and every cold admission's condition includes attribute_not_exists(hot),
// so after the switch no instance counts on the item as a lone counter: its
// next write is refused and names the shards and the base, and it goes hot
// too. Shard 0 is the item itself with cap base + ShardCap(limit - base,
// shards, 0); shard i its ShardCap(limit - base, shards, i): together the
// limit, whatever the number of instances and whenever they learn.
//
// A scope turns hot on an instance when a write of its counter is
// throttled (the ceiling met, whatever it is), when its rate on the
// instance passes HotRate(ItemWrites) while its limit is at least
// HotRPM(ItemWrites) (a hint: DynamoDB's 1,000 units a second), or in the
// window after one where it was hot on the instance. Small limits at low
// rates never turn hot: today's single write and cost.
//
//   - Never over the limit: every admitted request is one the shared
//     counters counted.
//   - No false refusal while the scope has room, but for the tail: a hot
//     refusal comes only after every shard was seen full by this instance
//     (a full shard stays full: requests are only added in a window), so
//     what can go unadmitted is the unused blocks other instances still
//     hold: at most HotBlockMax(limit) (0.2% of the limit) per instance.
//   - Cost: a block's write is 1 unit whatever its size; blocks follow the
//     instance's observed rate (about HotRefill of traffic, up to
//     HotBlockMax), so a scope costs about one write per HotRefill per
//     instance however high its rate, plus one refused write per shard per
//     instance at the window's end, plus the switch.
//   - Throttling: a throttled block write is retried on another shard after
//     a jittered backoff within the admission's bound, and the instance's
//     blocks grow for the rest of the window; the next window's switch
//     doubles the shards. Past the bound the fail-open/fail-closed rule
//     applies (Admitter.failure). Each throttled write is counted
//     (Admitter.Throttled, OnThrottle).

// Taker is the part of a Backend hot scopes need.
type Taker interface {
	// Take takes n requests from one shard of a hot scope's window if the
	// shard holds at most cap - n. When it has no room for n, taken is 0
	// and counted is what the shard holds.
	Take(ctx context.Context, slot Slot, window, expires time.Time, cap, n int64) (taken, counted int64, err error)
	// Switch turns slot's counter item (shard 0) of the window hot over
	// shards shards, recording what it counts as the base, unless it is
	// hot already; it returns the item's shards and base either way.
	Switch(ctx context.Context, slot Slot, window, expires time.Time, shards int) (n int, base int64, err error)
}

// ErrThrottled marks a store error caused by throttling (DynamoDB's
// per-partition write ceiling); it wraps ErrUnavailable.
var ErrThrottled = fmt.Errorf("%w: throttled", ErrUnavailable)

// HotRefill is the traffic one block should carry: an instance sizes its
// blocks to take about this long to use.
const HotRefill = 100 * time.Millisecond

// HotRPM returns the request limit from which a scope may turn hot by its
// rate alone on a store whose items take itemWrites units a second: the
// limit one item carries with headroom (RPMPerShard at DynamoDB's 1,000
// units a second). 0: never by rate.
func HotRPM(itemWrites float64) int64 {
	if itemWrites <= 0 {
		return 0
	}
	return max(int64(itemWrites*RPMPerShard/WriteCeiling), 2)
}

// HotRate is the requests a second of one scope on one instance from which
// it turns hot (with a limit of at least HotRPM): a tenth of an item's
// writes.
func HotRate(itemWrites float64) int64 { return max(int64(itemWrites/10), 1) }

// HotShards returns the shards a scope turns hot over: one per HotRPM of
// the limit, at least 4, doubled by each earlier throttled hot window
// (grow), at most MaxShards and the limit.
func HotShards(rpm, hotRPM int64, grow int) int {
	n := max((rpm+hotRPM-1)/max(hotRPM, 1), 4) << min(grow, 6)
	return int(min(n, MaxShards, rpm))
}

// HotBlockMax is the largest block an instance takes of a hot scope: 0.2%
// of the limit (at least 1), the most of it one instance can leave unused.
func HotBlockMax(rpm int64) int64 { return max(rpm/500, 1) }

// hotKey names a hot scope's state on this instance.
type hotKey struct {
	kind Kind
	id   string
}

// hotState is one instance's view of one scope in its current window.
type hotState struct {
	mu       sync.Mutex
	window   time.Time
	shards   int           // > 0: hot in the window, over this many shards
	base     int64         // what shard 0 counted when it turned hot
	avail    int64         // requests taken and not yet admitted
	full     uint64        // shards seen full in the window
	inflight int           // block writes in flight
	started  time.Time     // when the last one started
	done     chan struct{} // closed when one ends
	waiting  int64         // requests waiting for one
	slow     int           // the block-size doubling learned from throttling (0..4)
	// rate: requests seen in second sec, and in the second before it.
	sec        int64
	cur, prev  int64
	lastThrott time.Time
	lastHot    time.Time // the last window the scope was hot here
	grow       int       // doublings of the shards learned from throttling
	// the window before, for requests still admitted in it
	prevWindow time.Time
	prevShards int
	prevBase   int64
	lease      *leaseHints // a lease scope's shard hints (hot_lease.go)
}

// old returns a state of its own for a request of a window older than
// st's: hot when it was the window before and hot (st.mu held).
func (st *hotState) old(w time.Time) *hotState {
	o := &hotState{window: w, done: make(chan struct{})}
	if st.prevWindow.Equal(w) {
		o.shards, o.base = st.prevShards, st.prevBase
	}
	return o
}

// hotScopes holds an Admitter's scope states.
type hotScopes struct {
	mu     sync.RWMutex
	states map[hotKey]*hotState
}

// maxHotStates bounds the states an instance keeps; past it, those of
// scopes not seen for two windows are dropped.
const maxHotStates = 10_000

func (h *hotScopes) state(s Scope) *hotState {
	k := hotKey{s.Kind, s.ID}
	h.mu.RLock()
	st := h.states[k]
	h.mu.RUnlock()
	if st != nil {
		return st
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.states == nil {
		h.states = map[hotKey]*hotState{}
	}
	if st = h.states[k]; st == nil {
		if len(h.states) >= maxHotStates {
			old := WindowStart(time.Now()).Add(-2 * time.Minute)
			for k, o := range h.states {
				o.mu.Lock()
				if o.window.Before(old) && o.inflight == 0 {
					delete(h.states, k)
				}
				o.mu.Unlock()
			}
		}
		st = &hotState{done: make(chan struct{})}
		h.states[k] = st
	}
	return st
}

// hotRef is a scope counted hot in a request, with its state.
type hotRef struct {
	Scope
	st *hotState
}

// eligible reports whether s may turn hot: a Taker backend, a request
// limit only, one counter item.
func eligible(t Taker, s Scope) bool {
	return t != nil && s.TPM == 0 && s.RPM >= 2 && s.Shards <= 1
}

// hotMode is what a request does with an eligible scope.
type hotMode int

const (
	modeCold   hotMode = iota
	modeHot            // hot in the window: take from a block
	modeSwitch         // turn it hot, then take from a block
)

// mode counts a request of s in window w on st and says how to count it.
// A request of a window older than st's gets a state of its own (hot only
// when its item says so).
func (a *Admitter) mode(s Scope, w time.Time, st *hotState) (hotMode, *hotState) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.count(time.Now())
	if st.window.After(w) {
		if o := st.old(w); o.shards > 0 {
			return modeHot, o
		}
		return modeCold, st.old(w)
	}
	if st.window.Before(w) {
		st.prevWindow, st.prevShards, st.prevBase = st.window, st.shards, st.base
		st.window, st.shards, st.base, st.avail, st.full = w, 0, 0, 0, 0
	}
	switch {
	case st.shards > 0:
		return modeHot, st
	case st.lastHot.Equal(w.Add(-time.Minute)):
		return modeSwitch, st
	case a.ItemWrites > 0 && s.RPM >= HotRPM(a.ItemWrites) && st.rate() >= HotRate(a.ItemWrites):
		return modeSwitch, st
	}
	return modeCold, st
}

// learn records that s is hot in window w over shards with base.
func (st *hotState) learn(w time.Time, shards int, base int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.window.Equal(w) && st.shards == 0 {
		st.shards, st.base, st.full, st.avail = shards, base, 0, 0
	}
	if st.lastHot.Before(w) {
		st.lastHot = w
	}
}

// switchHot turns h hot in window w (or learns it was), retrying a
// throttled write with backoff until ctx ends.
func (a *Admitter) switchHot(ctx context.Context, t Taker, h hotRef, w time.Time) error {
	h.st.mu.Lock()
	want := HotShards(h.RPM, HotRPM(a.ItemWrites), h.st.grow)
	h.st.mu.Unlock()
	return a.untilUnthrottled(ctx, func() error {
		n, base, err := t.Switch(ctx, Slot{Kind: h.Kind, ID: h.ID}, w, w.Add(time.Minute+CounterTTL), want)
		if err == nil {
			h.st.learn(w, n, base)
		}
		return err
	})
}

// untilUnthrottled runs write until it is not throttled, counting each
// throttled try and backing off before the next, until ctx ends.
func (a *Admitter) untilUnthrottled(ctx context.Context, write func() error) error {
	for attempt := 0; ; attempt++ {
		err := write()
		if !errors.Is(err, ErrThrottled) {
			return err
		}
		a.CountThrottle()
		if err := backoff(ctx, attempt, err); err != nil {
			return err
		}
	}
}

// backoff waits a jittered, growing time before a throttled write's next
// attempt, or returns an error when ctx ends first.
func backoff(ctx context.Context, attempt int, cause error) error {
	d := time.Duration(rand.Int64N(int64(min(10*time.Millisecond<<min(attempt, 5), 200*time.Millisecond)) + 1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w: throttled until the admission's bound: %w", ErrUnavailable, cause)
	case <-t.C:
		return nil
	}
}

// takeHot takes one request of hot scope h for window w: from this
// instance's block, or a new block. ok false: every shard is full.
func (a *Admitter) takeHot(ctx context.Context, t Taker, h hotRef, w time.Time) (ok bool, err error) {
	st := h.st
	st.mu.Lock()
	for {
		if !st.window.Equal(w) || st.shards == 0 {
			// The window moved on meanwhile: a block of one in this one.
			o := st.old(w)
			st.mu.Unlock()
			if o.shards == 0 {
				return false, fmt.Errorf("%w: the window of a hot scope ended", ErrUnavailable)
			}
			got, err := a.refill(ctx, t, hotRef{h.Scope, o}, w, 1, allShards(o.shards))
			return got > 0, err
		}
		all := allShards(st.shards)
		if st.avail > 0 {
			st.avail--
			st.mu.Unlock()
			return true, nil
		}
		if st.full&all == all {
			st.mu.Unlock()
			return false, nil
		}
		// One block write at a time, unless it is slow (a throttled retry,
		// a slow answer): then up to hotRefills, so one stalled write does
		// not queue the instance's requests behind it.
		if st.inflight > 0 && (st.inflight >= hotRefills || time.Since(st.started) < hotStall) {
			ch := st.done
			st.waiting++
			st.mu.Unlock()
			timer := time.NewTimer(hotStall)
			select {
			case <-ch:
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				st.mu.Lock()
				st.waiting--
				st.mu.Unlock()
				return false, fmt.Errorf("%w: waiting for a block: %w", ErrUnavailable, ctx.Err())
			}
			timer.Stop()
			st.mu.Lock()
			st.waiting--
			continue
		}
		block := min(max(st.rate()*int64(HotRefill)/int64(time.Second), st.waiting+1)<<st.slow, HotBlockMax(h.RPM))
		st.inflight++
		st.started = time.Now()
		st.mu.Unlock()
		got, err := a.refill(ctx, t, h, w, max(block, 1), all)
		st.mu.Lock()
		st.inflight--
		close(st.done)
		st.done = make(chan struct{})
		if err != nil {
			st.mu.Unlock()
			return false, err
		}
		if st.window.Equal(w) {
			st.avail += got
		}
	}
}

// pickShard returns a random shard of the mask free (not 0).
func pickShard(free uint64) int {
	k := rand.IntN(bits.OnesCount64(free))
	for f := free; ; f &= f - 1 {
		if k == 0 {
			return bits.TrailingZeros64(f)
		}
		k--
	}
}

// allShards is the mask of n shards.
func allShards(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return uint64(1)<<n - 1
}

// hotRefills bounds an instance's block writes in flight for one scope;
// hotStall is how long one may take before another starts.
const (
	hotRefills = 4
	hotStall   = 25 * time.Millisecond
)

// refill takes a block of up to block requests from a shard of h not seen
// full (marking those it finds full), retrying throttled writes on another
// shard with backoff until ctx ends. It returns how many it took: 0 only
// when every shard is full.
func (a *Admitter) refill(ctx context.Context, t Taker, h hotRef, w time.Time, block int64, all uint64) (int64, error) {
	st := h.st
	expires := w.Add(time.Minute + CounterTTL)
	st.mu.Lock()
	n, base := st.shards, st.base
	st.mu.Unlock()
	for attempt := 0; ; {
		st.mu.Lock()
		free := all &^ st.full
		st.mu.Unlock()
		if free == 0 {
			return 0, nil
		}
		shard := pickShard(free) // a random shard among those not seen full
		cap := ShardCap(max(h.RPM-base, 0), n, shard)
		if shard == 0 {
			cap += base
		}
		slot := Slot{Kind: h.Kind, ID: h.ID, Shard: shard}
		taken, counted, err := t.Take(ctx, slot, w, expires, cap, block)
		switch {
		case err == nil && taken > 0:
			return taken, nil
		case err == nil:
			if room := cap - counted; room > 0 {
				block = min(block, room) // take what is left of it
				continue
			}
			st.mu.Lock()
			st.full |= 1 << shard
			st.mu.Unlock()
		case errors.Is(err, ErrThrottled):
			a.CountThrottle()
			st.mu.Lock()
			st.slow = min(st.slow+1, 4)
			if st.lastThrott.Before(w) { // once a window: the next switch doubles the shards
				st.grow = min(st.grow+1, 4)
			}
			st.lastThrott = time.Now()
			st.mu.Unlock()
			if err := backoff(ctx, attempt, err); err != nil {
				return 0, err
			}
			attempt++
		default:
			return 0, err
		}
	}
}

// count adds a request to st's rate (st.mu held), and forgets what
// throttling taught after a quiet second.
func (st *hotState) count(now time.Time) {
	sec := now.Unix()
	switch {
	case sec == st.sec:
	case sec == st.sec+1:
		st.prev, st.cur, st.sec = st.cur, 0, sec
	default:
		st.prev, st.cur, st.sec = 0, 0, sec
	}
	st.cur++
	if st.slow > 0 && now.Sub(st.lastThrott) > 10*time.Second {
		st.slow--
		st.lastThrott = now
	}
}

// rate is st's requests a second: the last full second's, or the current
// one's if higher.
func (st *hotState) rate() int64 { return max(st.prev, st.cur) }

// giveBack returns requests taken by takeHot and not used (another scope
// refused the request): they stay counted in the shared counters, and this
// instance admits them later in the window.
func giveBack(hot []hotRef, w time.Time) {
	for _, h := range hot {
		h.st.mu.Lock()
		if h.st.window.Equal(w) && h.st.shards > 0 {
			h.st.avail++
		}
		h.st.mu.Unlock()
	}
}

// CountThrottle counts a throttled write (Throttled, OnThrottle).
func (a *Admitter) CountThrottle() {
	a.throttled.Add(1)
	if a.OnThrottle != nil {
		a.OnThrottle()
	}
}

// Throttled returns how many writes of hot scopes' blocks, and throttled
// transactions, met throttling (the throttle metric).
func (a *Admitter) Throttled() int64 { return a.throttled.Load() }
