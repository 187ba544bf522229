package cooldown

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// CachedOptions configure a Cached store.
type CachedOptions struct {
	// TTL is how long a read of the shared store is reused; 0: every read
	// goes to the shared store.
	TTL time.Duration
	// Now is the clock that ages cache entries; nil: time.Now.
	Now func() time.Time
	// Logger receives a line when the shared store fails; nil: slog.Default().
	Logger *slog.Logger
}

// Cached is the per-instance view of a shared Store. Reads of the shared
// store are reused for a short TTL, so the common request makes no call;
// failures this instance records also go to a local Memory store, so they
// cool the deployment here at once, even when the shared store is down.
//
// Cooldowns are advisory: when the shared store fails, Cached logs it and
// answers from what it knows (local failures and the last read), rather
// than failing the request; a failed read is not retried before the TTL.
type Cached struct {
	shared Store
	local  *Memory
	ttl    time.Duration
	now    func() time.Time
	logger *slog.Logger

	mu    sync.Mutex
	cache map[string]cachedUntil
}

type cachedUntil struct {
	until   time.Time // zero: not cooling down when read
	fetched time.Time
}

var _ Store = (*Cached)(nil)

// maxCached bounds the cache; past it the cache is cleared.
const maxCached = 100_000

// NewCached returns a caching view of shared.
func NewCached(shared Store, o CachedOptions) *Cached {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Cached{shared: shared, local: NewMemory(), ttl: o.TTL, now: o.Now, logger: o.Logger, cache: map[string]cachedUntil{}}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// RecordFailure implements Store. It records f locally and in the shared
// store, and returns the later of the two cooldown ends.
func (c *Cached) RecordFailure(ctx context.Context, f Failure) (time.Time, error) {
	local, err := c.local.RecordFailure(ctx, f)
	if err != nil {
		return time.Time{}, err
	}
	shared, err := c.shared.RecordFailure(ctx, f)
	if err != nil {
		c.logger.WarnContext(ctx, "cooldown: shared store failed; cooling locally", "deployment", f.Deployment, "err", err)
		return local, nil
	}
	if !shared.IsZero() {
		c.mu.Lock()
		e, ok := c.cache[f.Deployment]
		if !ok {
			e.fetched = c.now()
		}
		e.until = later(e.until, shared)
		c.store(f.Deployment, e)
		c.mu.Unlock()
	}
	return later(local, shared), nil
}

// store sets a cache entry; c.mu is held.
func (c *Cached) store(id string, e cachedUntil) {
	if len(c.cache) >= maxCached {
		clear(c.cache)
	}
	c.cache[id] = e
}

func (c *Cached) fresh(e cachedUntil, at time.Time) bool {
	age := at.Sub(e.fetched)
	return age >= 0 && age < c.ttl
}

// CoolingDown implements Store. Only ids without a fresh cache entry are
// read from the shared store, in one call.
func (c *Cached) CoolingDown(ctx context.Context, ids []string, now time.Time) (map[string]time.Time, error) {
	out, err := c.local.CoolingDown(ctx, ids, now)
	if err != nil {
		return nil, err
	}
	at := c.now()
	var stale []string
	c.mu.Lock()
	for _, id := range ids {
		if e, ok := c.cache[id]; !ok || !c.fresh(e, at) {
			stale = append(stale, id)
		}
	}
	c.mu.Unlock()

	if len(stale) > 0 {
		got, err := c.shared.CoolingDown(ctx, stale, now)
		c.mu.Lock()
		for _, id := range stale {
			e := c.cache[id]
			if err == nil {
				e.until = got[id]
			}
			e.fetched = at // after a failure too: do not hammer a failing store
			c.store(id, e)
		}
		c.mu.Unlock()
		if err != nil {
			c.logger.WarnContext(ctx, "cooldown: shared store failed; using cached and local state", "deployments", len(stale), "err", err)
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if u := later(out[id], c.cache[id].until); u.After(now) {
			if out == nil {
				out = make(map[string]time.Time, len(ids))
			}
			out[id] = u
		}
	}
	return out, nil
}
