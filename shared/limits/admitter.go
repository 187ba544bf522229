package limits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// This file is the part of an admission every store shares (the driver
// side, as in go-cloud): validation, shard choice, one retry on another
// shard, and the fail-open/fail-closed policy. A store implements Backend.

// CounterTTL is how long after its window ends a counter item may be
// deleted by TTL. Correctness never depends on the deletion: a window is
// picked by its start time, so an expired item is simply never read again.
const CounterTTL = 2 * time.Minute

// Item is one counter item a plan touches.
type Item struct {
	Scope  Scope
	Slot   Slot
	Shards int   // effective number of shards of the scope
	RPMCap int64 // this shard's request cap; 0: none
	TPMCap int64 // this shard's token cap; 0: none
	// Lease marks the scope's lease item (Scope.Parallel) rather than its
	// per-minute counter; ParCap is its bound, and Reap the expired leases
	// of other requests the attempt removes in the same write (learned from
	// a refused attempt, see parallel.go).
	Lease  bool
	ParCap int64
	Reap   []StaleLease
}

// Plan is a validated admission ready for a backend.
type Plan struct {
	Req     AdmitRequest
	Window  time.Time // window start
	Expires time.Time // TTL of the counter items
	Items   []Item    // counted scopes, in request order
}

// Outcome is a backend's answer to one attempt at a plan.
type Outcome struct {
	Allowed    bool
	Item       int    // index in Plan.Items that had no room, or -1
	ItemReason Reason // ReasonRPM or ReasonTPM
	// Budget is set when the hold's budget BudgetIndex had no room;
	// Committed is its counter's value.
	Budget      bool
	BudgetIndex int
	Committed   int64
	// Stale are the expired leases a refused lease item still counts, and
	// Retry says it had room after all (its item changed meanwhile): in
	// either case the admitter tries again, reaping Stale.
	Stale []StaleLease
	Retry bool
	// HotShards is set when the item had no room because its scope turned
	// hot in the window (hot.go), over that many shards; HotBase is what
	// the item counted then.
	HotShards int
	HotBase   int64
}

// BlockedByBudget returns an Outcome blocked by the hold's budget i, whose
// counter holds committed.
func BlockedByBudget(i int, committed int64) Outcome {
	return Outcome{Item: -1, Budget: true, BudgetIndex: i, Committed: committed}
}

// Blocked returns an Outcome blocked by item i.
func BlockedByItem(i int, r Reason) Outcome { return Outcome{Item: i, ItemReason: r} }

// AllowedOutcome is the Outcome of an admitted attempt.
var AllowedOutcome = Outcome{Allowed: true, Item: -1}

// RoomFor returns why an item holding req requests and tok tokens has no
// room for one more request of tokens, or "" when it has.
func (it Item) RoomFor(req, tok, tokens int64) Reason {
	if it.RPMCap > 0 && req+1 > it.RPMCap {
		return ReasonRPM
	}
	if it.TPMCap > 0 && AddSat(tok, tokens) > it.TPMCap {
		return ReasonTPM
	}
	return ""
}

// Backend makes one atomic attempt at a plan: it checks every item (and
// the hold's budgets) and, only if all have room, adds one request and Plan.Req.Tokens tokens
// to every item. A backend that cannot answer returns an error wrapping
// ErrUnavailable.
type Backend interface {
	Attempt(ctx context.Context, p *Plan) (Outcome, error)
}

// Admitter runs admissions on a Backend. The zero value is not usable; set
// Backend.
//
// A slow store is not a failed one: an admission waits for its
// conditional write up to its bound (Bound: the request's own deadline
// less a margin, at most Timeout), so limits stay exact while the store
// answers in time. The fail-open policy (Scope.OnError) applies only when
// the store could not answer: an error, throttling, an unreachable
// endpoint, or no answer within Timeout. An answer still missing at the
// request's own bound refuses the request (ErrUnavailable: the write may
// yet be applied, and there is no time left to serve it anyway).
type Admitter struct {
	Backend Backend
	Logger  *slog.Logger    // nil: slog.Default()
	Pick    func(n int) int // shard picker in [0, n); nil: math/rand/v2
	// Timeout is the longest an admission waits for the store when the
	// request's deadline allows more; 0: DefaultAdmitTimeout.
	Timeout time.Duration
	// ItemWrites is the write units a second one item of the Backend takes
	// (DynamoDB's 1,000; less in a scaled test); with a Backend that is a
	// Taker it turns on hot scopes (hot.go) from HotRPM(ItemWrites). 0: none.
	ItemWrites float64
	// OnThrottle, if set, is called for each throttled write (the
	// throttle metric).
	OnThrottle func()

	failed, throttled atomic.Int64
	hotStates         hotScopes
	hotBudgets        hotBudgets // hot_budget.go
	leaseStates       hotScopes  // hot leases (hot_lease.go)
}

// DefaultAdmitTimeout is Admitter.Timeout's default: past it, a store
// counts as unreachable (the fail-open policy applies).
const DefaultAdmitTimeout = 10 * time.Second

// AdmitMargin is what an admission leaves of the request's deadline for
// the rest of the request (the upstream call).
const AdmitMargin = time.Second

// Bound returns how long an admission made at now may wait for the store:
// max (0: DefaultAdmitTimeout), or less when the request's deadline (ctx's)
// comes sooner: the time left less AdmitMargin, or half the time left when
// that is less than twice the margin. byDeadline says the request's
// deadline set it.
func Bound(ctx context.Context, now time.Time, max time.Duration) (bound time.Duration, byDeadline bool) {
	if max <= 0 {
		max = DefaultAdmitTimeout
	}
	dl, ok := ctx.Deadline()
	if !ok {
		return max, false
	}
	left := dl.Sub(now)
	bound = left - AdmitMargin
	if left < 2*AdmitMargin {
		bound = left / 2
	}
	if bound >= max {
		return max, false
	}
	return bound, true
}

// FailedOpen returns how many requests were admitted uncounted because the
// store could not answer (the fail-open metric).
func (a *Admitter) FailedOpen() int64 { return a.failed.Load() }

// Admit implements Store.Admit on a.Backend.
func (a *Admitter) Admit(ctx context.Context, req AdmitRequest) (Decision, error) {
	if err := Validate(req); err != nil {
		return Decision{}, err
	}
	w := WindowStart(req.Now)
	taker, _ := a.Backend.(Taker)
	var hot, switching []hotRef // scopes counted hot (hot.go), and those turning hot first
	for _, s := range req.Scopes {
		if !s.counted() || !eligible(taker, s) {
			continue
		}
		switch m, st := a.mode(s, w, a.hotStates.state(s)); m {
		case modeHot:
			hot = append(hot, hotRef{s, st})
		case modeSwitch:
			switching = append(switching, hotRef{s, st})
		}
	}
	p := a.plan(req, w, hot, switching)
	// An estimate larger than a whole shard's TPM can never fit.
	for i, it := range p.Items {
		if it.TPMCap > 0 && req.Tokens > it.TPMCap {
			return a.decide(p, BlockedByItem(i, ReasonTPM)), nil
		}
	}
	// A hold that cannot fit on the counter as the caller read it is
	// refused without a round trip (the store's condition checks the rest).
	if h := req.Hold; h != nil {
		for i, b := range h.Budgets {
			if b.Base+h.Amount > b.Max {
				return a.decide(p, BlockedByBudget(i, b.Base)), nil
			}
		}
	}
	if len(p.Items) == 0 && req.Hold == nil && len(hot) == 0 && len(switching) == 0 {
		return Decision{Allowed: true, Admission: Admission{Window: p.Window}}, nil
	}

	bound, byDeadline := Bound(ctx, time.Now(), a.Timeout)
	actx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()

	// Leases that turn hot by their rate do; a hot lease whose shards were
	// all seen full lately is refused without a write (hot_lease.go).
	if i, err := a.leasePrepare(actx, p); err != nil {
		return a.unanswered(ctx, actx, p, nil, err, bound, byDeadline)
	} else if i >= 0 {
		return a.decide(p, BlockedByItem(i, ReasonParallel)), nil
	}
	for _, h := range switching {
		if err := a.switchHot(actx, taker, h, w); err != nil {
			return a.unanswered(ctx, actx, p, append(hot, switching...), err, bound, byDeadline)
		}
		hot = append(hot, h)
	}
	for round := 0; ; round++ {
		for i, h := range hot {
			ok, err := a.takeHot(actx, taker, h, w)
			if err == nil && ok {
				continue
			}
			giveBack(hot[:i], w)
			if err != nil {
				return a.unanswered(ctx, actx, p, hot, err, bound, byDeadline)
			}
			return Decision{Reason: ReasonRPM, BlockedScope: h.Scope, RetryAfter: p.Window.Add(time.Minute).Sub(req.Now)}, nil
		}
		if len(p.Items) == 0 && req.Hold == nil {
			return a.decide(p, AllowedOutcome), nil
		}
		d, turned, err := a.attempt(ctx, actx, p, taker, hot, bound, byDeadline)
		if len(turned) > 0 && round >= 3 {
			giveBack(hot, w)
			return a.unanswered(ctx, actx, p, hot, fmt.Errorf("%w: scopes kept turning hot", ErrUnavailable), bound, byDeadline)
		}
		if len(turned) > 0 {
			// Scopes of the plan turned hot (here, or on another
			// instance): count them from blocks, the rest as before.
			giveBack(hot, w)
			hot = append(hot, turned...)
			p = a.plan(req, w, hot, nil)
			continue
		}
		if err != nil || !d.Allowed {
			giveBack(hot, w)
		}
		return d, err
	}
}

// plan is req's plan for window w: a counter item per counted scope not
// counted hot, a lease item per scope with a parallel bound.
func (a *Admitter) plan(req AdmitRequest, w time.Time, hot, switching []hotRef) *Plan {
	pick := a.Pick
	if pick == nil {
		pick = rand.IntN
	}
	p := &Plan{Req: req, Window: w, Expires: w.Add(time.Minute + CounterTTL)}
	for _, s := range req.Scopes {
		if s.counted() && !isHot(s, hot) && !isHot(s, switching) {
			n := effectiveShards(s)
			it := Item{Scope: s, Shards: n, Slot: Slot{Kind: s.Kind, ID: s.ID, Shard: pick(n)}}
			it.RPMCap, it.TPMCap = ShardCap(s.RPM, n, it.Slot.Shard), ShardCap(s.TPM, n, it.Slot.Shard)
			p.Items = append(p.Items, it)
		}
		if s.Parallel > 0 {
			p.Items = append(p.Items, a.leaseItem(s))
		}
	}
	return p
}

func isHot(s Scope, hot []hotRef) bool {
	for _, h := range hot {
		if h.Kind == s.Kind && h.ID == s.ID {
			return true
		}
	}
	return false
}

// attempt runs the plan's items on the backend (after its hot scopes were
// taken), with one retry on another shard of a full one, the reaping of
// expired leases, and throttled writes retried with backoff. turned are the
// plan's scopes that turned hot: found so (another instance switched
// them), or switched here after their write was throttled.
func (a *Admitter) attempt(ctx, actx context.Context, p *Plan, taker Taker, hot []hotRef, bound time.Duration, byDeadline bool) (d Decision, turned []hotRef, err error) {
	req := p.Req
	pick := a.Pick
	if pick == nil {
		pick = rand.IntN
	}
	out, err := a.attemptHold(actx, p)
	for try := 0; errors.Is(err, ErrThrottled); try++ {
		// Throttled: the scopes that may turn hot do (leases in place,
		// hot_lease.go); otherwise (a budget, a TPM scope) try again after
		// a backoff.
		blocked, wait, lerr := a.leaseThrottled(actx, p)
		if lerr != nil {
			d, err := a.unanswered(ctx, actx, p, hot, lerr, bound, byDeadline)
			return d, nil, err
		}
		if blocked >= 0 { // a hot lease with no shard left with room
			return a.decide(p, BlockedByItem(blocked, ReasonParallel)), nil, nil
		}
		for _, it := range p.Items {
			if !it.Lease && eligible(taker, it.Scope) {
				h := hotRef{it.Scope, a.hotStates.state(it.Scope)}
				if err := a.switchHot(actx, taker, h, p.Window); err != nil {
					d, err := a.unanswered(ctx, actx, p, hot, err, bound, byDeadline)
					return d, nil, err
				}
				turned = append(turned, h)
			}
		}
		if len(turned) > 0 {
			return Decision{}, turned, nil
		}
		if wait || !leasesOnly(p) {
			if berr := backoff(actx, try, err); berr != nil {
				err = berr
				break
			}
		}
		out, err = a.attemptHold(actx, p)
	}
	if err == nil && !out.Allowed && out.Item >= 0 && out.HotShards > 0 && !p.Items[out.Item].Lease {
		// Another instance turned the item's scope hot.
		it := p.Items[out.Item]
		h := hotRef{it.Scope, a.hotStates.state(it.Scope)}
		if _, st := a.mode(it.Scope, p.Window, h.st); st != h.st {
			h.st = st // a window older than the state's
		}
		h.st.learn(p.Window, out.HotShards, out.HotBase)
		return Decision{}, []hotRef{h}, nil
	}
	if err == nil && !out.Allowed && out.Item >= 0 && p.Items[out.Item].Shards > 1 && !p.Items[out.Item].Lease {
		// The chosen shard is full; another may have room. Try once more.
		it := &p.Items[out.Item]
		it.Slot.Shard = (it.Slot.Shard + 1 + pick(it.Shards-1)) % it.Shards
		it.RPMCap, it.TPMCap = ShardCap(it.Scope.RPM, it.Shards, it.Slot.Shard), ShardCap(it.Scope.TPM, it.Shards, it.Slot.Shard)
		if it.TPMCap == 0 || req.Tokens <= it.TPMCap {
			out, err = a.attemptHold(actx, p)
		}
	}
	// A lease item counted leases that expired (their requests never
	// released them), turned hot, or, hot, had its shard full: try again.
	out, err = a.leaseRetries(actx, p, out, err)
	if err != nil {
		d, err := a.unanswered(ctx, actx, p, hot, err, bound, byDeadline)
		return d, nil, err
	}
	return a.decide(p, out), nil, nil
}

// unanswered applies the fail policy to a store that did not answer: past
// the request's own deadline it is refused, otherwise failure decides.
func (a *Admitter) unanswered(ctx, actx context.Context, p *Plan, hot []hotRef, err error, bound time.Duration, byDeadline bool) (Decision, error) {
	{
		if actx.Err() != nil && (byDeadline || ctx.Err() != nil) {
			// Slow, not down: the request's own time ran out first.
			a.logger().WarnContext(ctx, "limits store did not answer before the request's deadline; request refused",
				"err", err, "bound", bound, "scopes", len(p.Items), "hold", p.Req.Hold != nil)
			if !errors.Is(err, ErrUnavailable) {
				err = fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			return Decision{}, fmt.Errorf("admission not answered within the request's deadline (%v): %w", bound, err)
		}
		return a.failure(ctx, p, hot, err)
	}
}

func (a *Admitter) decide(p *Plan, out Outcome) Decision {
	if out.Allowed {
		d := Decision{Allowed: true, Admission: Admission{Window: p.Window}}
		for _, it := range p.Items {
			switch {
			case it.Lease:
				d.Admission.Lease = p.Req.Lease
				d.Admission.Leased = append(d.Admission.Leased, it.Slot)
			case it.TPMCap > 0:
				d.Admission.Slots = append(d.Admission.Slots, it.Slot)
			}
		}
		return d
	}
	if out.Budget {
		b := p.Req.Hold.Budgets[out.BudgetIndex]
		return Decision{Reason: ReasonBudget, BlockedBudget: &b, Committed: out.Committed}
	}
	d := Decision{Reason: out.ItemReason, BlockedScope: p.Items[out.Item].Scope}
	if out.ItemReason != ReasonParallel { // a lease ends with its request, not with the window
		d.RetryAfter = p.Window.Add(time.Minute).Sub(p.Req.Now)
	}
	return d
}

// failure applies the fail-open/fail-closed policy to a backend error.
func (a *Admitter) failure(ctx context.Context, p *Plan, hot []hotRef, err error) (Decision, error) {
	if !errors.Is(err, ErrUnavailable) {
		return Decision{}, err
	}
	for _, s := range hot {
		if s.OnError == FailClosed {
			return Decision{}, fmt.Errorf("scope %s %s fails closed: %w", s.Kind, s.ID, err)
		}
	}
	if p.Req.Hold != nil {
		return Decision{}, fmt.Errorf("strict budget hold fails closed: %w", err)
	}
	for _, it := range p.Items {
		if it.Scope.OnError == FailClosed {
			return Decision{}, fmt.Errorf("scope %s %s fails closed: %w", it.Scope.Kind, it.Scope.ID, err)
		}
	}
	a.failed.Add(1)
	a.logger().WarnContext(ctx, "rate limits failed open", "err", err, "scopes", len(p.Items), "failed_open_total", a.failed.Load())
	return Decision{Allowed: true, FailedOpen: true, Admission: Admission{Window: p.Window}}, nil
}

func (a *Admitter) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}
