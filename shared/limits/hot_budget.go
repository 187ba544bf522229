package limits

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Hot budgets: a strict budget's committed counter (Hold) is one item, and
// every reservation writes it (2 units, in the admission's transaction), so
// one counter carries about 500 reservations a second. A counter that
// meets its ceiling is turned hot, as hot scopes are (hot.go), for the
// rest of its period: its remaining room is split over shards whose caps
// add up to the budget exactly, and each reservation takes one shard with
// room for it.
//
// The switch is recorded in the counter's own item (BudgetTaker.
// SwitchBudget: SET hot = <shards>, hb = c IF attribute_not_exists(hot)),
// and every cold reservation's condition includes attribute_not_exists(hot),
// so after the switch no instance reserves on the item as a lone counter:
// its next reservation is refused and names the shards and the base, and
// it goes hot too. Shard 0 is the item itself with cap hb + ShardCap(Max -
// hb, shards, 0) (hb holds the holds made before the switch, which settle
// there; min(hb, Max) if max_budget was lowered since); shard i (counter
// name ".<i>", BudgetCounter.Shard) has ShardCap(Max - hb, shards, i). A
// reservation adds its amount to one shard IF the shard stays at or below
// its cap, so the shards together never pass Max, whatever the number of
// instances and whenever they learn.
//
// The hold names the shard it took (BudgetCounter.Shard, in its counter
// names: the hold item's counters and the spend event's), so that the
// consumer's settlement and the sweeper's release give back on that shard,
// exactly once, as for a cold counter (they name the counter; nothing there
// changes).
//
// A budget turns hot on an instance when a reservation's write on its
// counter is throttled (the ceiling met, whatever it is: the instance's
// rate is then taken for what one item carries, so a slower partition
// gets more shards), or when this instance's reservations on it pass
// HotRate(ItemWrites) a second (a hint).
// Slow budgets never turn hot: today's writes and cost. A hot reservation
// costs what a cold one costs (one counter item, now a shard, in the same
// transaction): the switch is one write per budget period.
//
//   - Never over the budget: the shards' caps add up to Max, and each
//     reservation is a conditional write on its shard.
//   - No false refusal while the budget has room, but for the tail: a hot
//     reservation tries the shards this instance has not seen short of its
//     amount in the last budgetSeen, each at most once, and is refused only
//     when every shard is short of it: what can go unreserved is less than
//     the reservation on each shard, less than shards x Amount, which
//     BudgetShards keeps under 1/BudgetTail (3%) of the room the budget had
//     when it turned hot (plus what settlements gave back in the last
//     budgetSeen).
//   - Throttling: a throttled reservation on a hot counter reads its shard
//     (reads are not under the write ceiling): a shard short of it is left
//     for another at once (the crowd on the last shards with room, as the
//     budget runs out, is refused rather than kept waiting); otherwise it
//     is retried on another shard after a jittered backoff, within the
//     admission's bound;
//     past it a hold fails closed (ErrUnavailable), as before. Each
//     throttled write is counted (Admitter.Throttled, OnThrottle).

// BudgetTaker is the part of a Backend hot budgets need: the reservation
// itself is the Backend's Attempt, on the shard BudgetCounter names.
type BudgetTaker interface {
	// SwitchBudget turns b's counter (its own item, shard 0) hot over
	// shards shards, recording what it holds (b.Base when nothing yet) as
	// the base, unless it is hot already; it returns the counter's shards
	// and base either way.
	SwitchBudget(ctx context.Context, b BudgetCounter, shards int) (n int, base int64, err error)
	// ReadBudget returns what b's shard (b.Shard) holds: a read, which
	// the item's write ceiling does not limit.
	ReadBudget(ctx context.Context, b BudgetCounter) (committed int64, err error)
}

// HoldThrottled is the error of a throttled attempt: on some of the hold's
// budget counters (Budgets, their indexes) and, with Others, on another of
// its items (a counter, a lease, the hold). It is an ErrThrottled.
type HoldThrottled struct {
	Budgets []int
	Others  bool
	Err     error
}

func (e *HoldThrottled) Error() string   { return ErrThrottled.Error() + ": " + e.Err.Error() }
func (e *HoldThrottled) Unwrap() []error { return []error{ErrThrottled, e.Err} }

// BudgetTail bounds a hot budget's false refusals: it turns hot over at
// most its room / (BudgetTail x the reservation) shards, so that less than
// 1/BudgetTail of the room it had then can be left unreserved.
const BudgetTail = 32

// budgetSeen is how long a shard seen short of a reservation stays
// skipped by this instance (settlements give room back).
const budgetSeen = time.Second

// BudgetShards returns the shards a budget with room left and reservations
// of amount turns hot over, when this instance reserves rate a second on it
// and an item takes itemWrites units a second: enough for four instances at
// this rate with each shard at a quarter of its ceiling, at least 16 (a
// shard costs nothing but its part of the tail: a reservation writes one
// shard however many there are, and the shards cannot grow later), at most
// MaxShards and room / (BudgetTail x amount). Under 2: the budget stays
// cold.
func BudgetShards(itemWrites float64, rate, room, amount int64) int {
	n := int64(16)
	if itemWrites >= 1 {
		n = max(n, (16*rate+int64(itemWrites)-1)/int64(itemWrites))
	}
	n = min(n, MaxShards)
	if amount > 0 {
		n = min(n, room/(BudgetTail*amount))
	}
	return int(max(n, 0))
}

// budgetKey names a budget counter's state on this instance.
type budgetKey struct {
	kind, id string
	period   int64
}

// budgetState is one instance's view of one budget counter.
type budgetState struct {
	mu     sync.Mutex
	meter  hotState // the reservation rate (count, rate)
	shards int      // > 0: hot, over this many shards
	base   int64    // what the counter held when it turned hot
	room   [MaxShards]int64
	seen   [MaxShards]time.Time // when room[i] was seen (a refusal)
}

// hotBudgets holds an Admitter's budget states. Dropping one is safe: the
// counter's item tells a cold reservation that it is hot.
type hotBudgets struct {
	mu     sync.Mutex
	states map[budgetKey]*budgetState
}

func (h *hotBudgets) state(b *BudgetCounter) *budgetState {
	k := budgetKey{b.Kind, b.ID, b.Period.Unix()}
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.states[k]
	if st == nil {
		if h.states == nil || len(h.states) >= maxHotStates {
			h.states = map[budgetKey]*budgetState{}
		}
		st = &budgetState{}
		h.states[k] = st
	}
	return st
}

// capOf is shard i's cap of budget b hot over st.shards from st.base
// (st.mu held): the caps add up to b.Max, also when max_budget was lowered
// below the base since.
func (st *budgetState) capOf(b *BudgetCounter, i int) int64 {
	c := ShardCap(max(b.Max-st.base, 0), st.shards, i)
	if i == 0 {
		c += min(st.base, b.Max)
	}
	return c
}

// pick points b at a shard with room for amount, or at its own item when
// it is cold; ok false: every shard is short of amount, and committed is
// what they hold as last seen. With stale, when no shard is known to have
// room but some were seen short longer than budgetSeen ago, it points b
// at the one seen longest ago and says so: the caller reads it rather
// than writes it (an instance rediscovering every shard of a spent budget
// with refused writes would spend the shards' write ceiling on them).
func (st *budgetState) pick(b *BudgetCounter, amount int64, now time.Time, stale bool) (committed int64, ok, read bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shards == 0 {
		b.Shard, b.Shards, b.Cap = 0, 0, 0
		return 0, true, false
	}
	var free uint64
	oldest := -1
	committed = b.Max
	for i := range st.shards {
		c := st.capOf(b, i)
		room := c
		switch {
		case now.Sub(st.seen[i]) < budgetSeen:
			room = min(room, st.room[i])
		case !st.seen[i].IsZero() && st.room[i] < amount && c >= amount:
			if oldest < 0 || st.seen[i].Before(st.seen[oldest]) {
				oldest = i
			}
			room = min(room, st.room[i]) // a stale view: read it first
		}
		committed -= max(room, 0)
		if room >= amount {
			free |= 1 << i
		}
	}
	b.Shards = st.shards
	switch {
	case free != 0:
		b.Shard = pickShard(free)
	case stale && oldest >= 0:
		b.Shard, read = oldest, true
	default:
		return max(committed, 0), false, false
	}
	b.Cap = st.capOf(b, b.Shard)
	return 0, true, read
}

// learn records that b's counter is hot over shards from base.
func (st *budgetState) learn(shards int, base int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shards == 0 && shards > 0 {
		st.shards, st.base = min(shards, MaxShards), base
	}
}

// short records that b's shard holds committed: less room than its
// reservation needed.
func (st *budgetState) short(b *BudgetCounter, committed int64, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.room[b.Shard], st.seen[b.Shard] = b.Cap-committed, now
}

// switchBudget turns b hot (or learns it is), over the shards its room
// and this instance's rate call for; a budget too small for 2 shards
// stays cold. force: throttling, not the rate, asks for it.
func (a *Admitter) switchBudget(ctx context.Context, bt BudgetTaker, b *BudgetCounter, amount int64, st *budgetState, force bool) error {
	st.mu.Lock()
	rate, hot := st.meter.rate(), st.shards > 0
	st.mu.Unlock()
	if hot || (!force && (a.ItemWrites <= 0 || rate < HotRate(a.ItemWrites))) {
		return nil
	}
	w := a.ItemWrites
	if force && rate > 0 && (w <= 0 || float64(rate) < w) {
		w = float64(rate) // throttled at this rate: take it for what an item carries
	}
	n := BudgetShards(w, rate, b.Max-b.Base, amount)
	if n < 2 {
		return nil
	}
	return a.untilUnthrottled(ctx, func() error {
		n, base, err := bt.SwitchBudget(ctx, *b, n)
		if err == nil {
			st.learn(n, base)
		}
		return err
	})
}

// assign points every budget of h at its counter or a shard of it with
// room (turning it hot first when this instance's rate asks for it).
// blocked >= 0 is a budget none of whose shards has room.
func (a *Admitter) assign(ctx context.Context, bt BudgetTaker, h *Hold, count bool) (blocked int, committed int64, err error) {
	now := time.Now()
	for i := range h.Budgets {
		b := &h.Budgets[i]
		st := a.hotBudgets.state(b)
		if count {
			st.mu.Lock()
			st.meter.count(now)
			st.mu.Unlock()
			if err := a.switchBudget(ctx, bt, b, h.Amount, st, false); err != nil {
				return -1, 0, err
			}
		}
		c, ok, read := st.pick(b, h.Amount, now, true)
		if read {
			// At most one read per budget and admission.
			if v, err := bt.ReadBudget(ctx, *b); err == nil && b.Cap-v < h.Amount {
				st.short(b, v, now)
				c, ok, _ = st.pick(b, h.Amount, now, false)
			}
		}
		if !ok {
			return i, c, nil
		}
	}
	return -1, 0, nil
}

// attemptHold is a.Backend.Attempt(ctx, p) with the hold's budgets on
// their counters or, hot, on shards with room: a shard found short is left
// for another, a cold counter found hot is learned, a throttled one turns
// hot and a throttled shard is left for another after a backoff. A
// throttling of the plan's other items is the caller's to handle.
func (a *Admitter) attemptHold(ctx context.Context, p *Plan) (Outcome, error) {
	h := p.Req.Hold
	bt, _ := a.Backend.(BudgetTaker)
	if h == nil || bt == nil {
		return a.Backend.Attempt(ctx, p)
	}
	if i, c, err := a.assign(ctx, bt, h, true); err != nil || i >= 0 {
		return BlockedByBudget(i, c), err
	}
	for try := 0; ; try++ {
		out, err := a.Backend.Attempt(ctx, p)
		var ht *HoldThrottled
		switch {
		case err == nil && out.Budget:
			b := &h.Budgets[out.BudgetIndex]
			st := a.hotBudgets.state(b)
			switch {
			case out.HotShards > 0 && b.Shards == 0: // turned hot elsewhere
				st.learn(out.HotShards, out.HotBase)
			case b.Shards > 0:
				st.short(b, out.Committed, time.Now())
			default:
				return out, nil // a cold counter without room
			}
			if try >= 4*MaxShards {
				return Outcome{}, fmt.Errorf("%w: budget shards kept refusing", ErrUnavailable)
			}
		case errors.As(err, &ht) && len(ht.Budgets) > 0:
			moved := false
			for _, i := range ht.Budgets {
				b := &h.Budgets[i]
				st := a.hotBudgets.state(b)
				if b.Shards > 0 {
					// A throttled shard may be full already (the crowd on
					// the last shards with room): a read says, and a full
					// one is left at once; another one after a backoff.
					if c, rerr := bt.ReadBudget(ctx, *b); rerr == nil && b.Cap-c < h.Amount {
						st.short(b, c, time.Now())
						moved = true
					}
					continue
				}
				if err := a.switchBudget(ctx, bt, b, h.Amount, st, true); err != nil {
					return Outcome{}, err
				}
				st.mu.Lock()
				moved = moved || st.shards > 0
				st.mu.Unlock()
			}
			if ht.Others {
				return out, err
			}
			if !moved {
				if berr := backoff(ctx, try, err); berr != nil {
					return Outcome{}, berr
				}
			}
		default:
			return out, err
		}
		if i, c, err := a.assign(ctx, bt, h, false); err != nil || i >= 0 {
			return BlockedByBudget(i, c), err
		}
	}
}
