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

// Hot scopes: a request-only limit (RPM, no TPM) large enough to meet one
// item's write ceiling (HotRPM) is counted over HotShards items whose caps
// (ShardCap) add up to the limit exactly, and each instance takes its
// requests from them in blocks: one conditional write takes up to a block
// of requests from one shard (Taker.Take: ADD req :n IF req <= cap - n),
// and the instance admits from its block without a call until it is used.
//
//   - Never over the limit: every admitted request is one the shared
//     counters counted, whatever the number of instances.
//   - No false refusal while the scope has room, but for the tail: a
//     refusal comes only after every shard was seen full by this instance
//     (a full shard stays full: requests are only added in a window), so
//     what can go unadmitted is the unused blocks other instances still
//     hold when their traffic stops: at most HotBlockMax(limit) (0.2% of
//     the limit) per instance.
//   - Cost: a block's write is 1 unit whatever its size; the block follows
//     the instance's observed rate (about HotRefill of traffic, up to
//     HotBlockMax), so the writes a scope costs stay near one per
//     HotRefill per instance however high its rate, plus at most one
//     refused write per shard per instance at the window's end. At a low
//     rate a block is one request: one UpdateItem, as a cold scope costs.
//   - Throttling: a throttled block write is retried on another shard after
//     a jittered backoff, within the admission's bound, and the instance's
//     blocks grow (writes fall) for the rest of the window; past the bound
//     the fail-open/fail-closed rule applies (Admitter.failure). Each
//     throttled write is counted (Admitter.Throttled).
//
// A scope is hot on every instance or on none (the decision reads only its
// limit and the store's ItemWrites), so the shard caps every instance uses
// are the same: mixing the one-item counter and the shards in one window
// could otherwise admit more than the limit.

// Taker is the part of a Backend hot scopes need: one conditional write
// that takes n requests from one shard of a scope's window if the shard
// holds at most cap - n. When it has no room for n, taken is 0 and counted
// is what the shard holds. A throttled write returns an error wrapping
// ErrThrottled.
type Taker interface {
	Take(ctx context.Context, slot Slot, window, expires time.Time, cap, n int64) (taken, counted int64, err error)
}

// ErrThrottled marks a store error caused by throttling (DynamoDB's
// per-partition write ceiling); it wraps ErrUnavailable.
var ErrThrottled = fmt.Errorf("%w: throttled", ErrUnavailable)

// HotRefill is the traffic one block should carry: an instance sizes its
// blocks to take about this long to use.
const HotRefill = 100 * time.Millisecond

// HotRPM returns the request limit from which a request-only scope is hot on
// a store whose items take itemWrites units a second: the limit one item
// carries with headroom (RPMPerShard at DynamoDB's 1,000 units a second,
// 10 RPM per unit a second). 0 means no scope is hot.
func HotRPM(itemWrites float64) int64 {
	if itemWrites <= 0 {
		return 0
	}
	return max(int64(itemWrites*RPMPerShard/WriteCeiling), 2)
}

// HotShards returns the shards of a hot scope with this limit: one per
// HotRPM of the limit, at least 2, at most MaxShards, each with at least
// one request.
func HotShards(rpm, hotRPM int64) int {
	n := min(max((rpm+hotRPM-1)/hotRPM, 2), MaxShards, rpm)
	return int(n)
}

// HotBlockMax is the largest block an instance takes of a hot scope: 0.2%
// of the limit (at least 1), the most of it one instance can leave unused.
// Once a shard was seen full in a window, blocks are of one request.
func HotBlockMax(rpm int64) int64 { return max(rpm/500, 1) }

// hotKey names a hot scope's state on this instance.
type hotKey struct {
	kind Kind
	id   string
}

// hotState is one instance's view of one hot scope in its current window.
type hotState struct {
	mu       sync.Mutex
	window   time.Time
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
}

// hotScopes holds an Admitter's hot states.
type hotScopes struct {
	mu     sync.RWMutex
	states map[hotKey]*hotState
}

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
		st = &hotState{done: make(chan struct{})}
		h.states[k] = st
	}
	return st
}

// hot reports whether s is counted as a hot scope by a.
func (a *Admitter) hot(s Scope) bool {
	hr := HotRPM(a.ItemWrites)
	return hr > 0 && s.TPM == 0 && s.RPM >= hr
}

// takeHot takes one request of hot scope s for window w: from this
// instance's block, or a new block. ok false: every shard is full.
func (a *Admitter) takeHot(ctx context.Context, t Taker, s Scope, w time.Time) (ok bool, err error) {
	st := a.hotStates.state(s)
	n := HotShards(s.RPM, HotRPM(a.ItemWrites))
	all := uint64(1)<<n - 1
	if n == 64 {
		all = ^uint64(0)
	}
	st.mu.Lock()
	st.count(time.Now())
	for {
		if st.window.Before(w) {
			st.window, st.avail, st.full = w, 0, 0
		}
		if !st.window.Equal(w) { // an older window than the state's: no block
			st.mu.Unlock()
			got, err := a.refill(ctx, t, s, w, 1, n, all, &hotState{window: w, done: make(chan struct{})})
			return got > 0, err
		}
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
		block := min(max(st.rate()*int64(HotRefill)/int64(time.Second), st.waiting+1)<<st.slow, HotBlockMax(s.RPM))
		st.inflight++
		st.started = time.Now()
		st.mu.Unlock()
		got, err := a.refill(ctx, t, s, w, max(block, 1), n, all, st)
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

// hotRefills bounds an instance's block writes in flight for one scope;
// hotStall is how long one may take before another starts.
const (
	hotRefills = 4
	hotStall   = 25 * time.Millisecond
)

// refill takes a block of up to block requests from a shard of s not seen
// full (marking those it finds full in st), retrying throttled writes on
// another shard with backoff until ctx ends. It returns how many it took:
// 0 only when every shard is full.
func (a *Admitter) refill(ctx context.Context, t Taker, s Scope, w time.Time, block int64, n int, all uint64, st *hotState) (int64, error) {
	expires := w.Add(time.Minute + CounterTTL)
	for attempt := 0; ; {
		st.mu.Lock()
		free := all &^ st.full
		st.mu.Unlock()
		if free == 0 {
			return 0, nil
		}
		// A random shard among those not seen full.
		k := rand.IntN(bits.OnesCount64(free))
		shard := 0
		for f := free; ; f &= f - 1 {
			if k == 0 {
				shard = bits.TrailingZeros64(f)
				break
			}
			k--
		}
		cap := ShardCap(s.RPM, n, shard)
		slot := Slot{Kind: s.Kind, ID: s.ID, Shard: shard}
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
			st.lastThrott = time.Now()
			st.mu.Unlock()
			backoff := time.Duration(rand.Int64N(int64(min(10*time.Millisecond<<min(attempt, 5), 200*time.Millisecond)) + 1))
			attempt++
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("%w: throttled until the admission's bound: %w", ErrUnavailable, err)
			case <-time.After(backoff):
			}
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

// giveBack returns a request taken by takeHot and not used (another scope
// refused the request): it stays counted in the shared counters, and this
// instance admits it later in the window.
func (a *Admitter) giveBack(s Scope, w time.Time) {
	st := a.hotStates.state(s)
	st.mu.Lock()
	if st.window.Equal(w) {
		st.avail++
	}
	st.mu.Unlock()
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
