package keys

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Cached is a Store that serves GetKey and GetTeam from a per-instance
// cache for a short TTL (not-found answers included, so a flood of unknown
// keys does not reach the store). Writes go to the store and drop the
// local entry. The cache only spares reads of settings; blocked, expiry and
// budget are checked authoritatively by the admission's guards.
type Cached struct {
	Store
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	keys  map[string]cachedKey
	teams map[string]cachedTeam
	admin adminCaches // users, members, end users (cached_admin.go)
}

type cachedKey struct {
	k       Key
	err     error
	fetched time.Time
}

type cachedTeam struct {
	t       Team
	err     error
	fetched time.Time
}

var _ Store = (*Cached)(nil)

// maxCached bounds each cache; past it the cache is cleared.
const maxCached = 100_000

// NewCached wraps s with a cache of reads for ttl, timed by now (nil: time.Now).
func NewCached(s Store, ttl time.Duration, now func() time.Time) *Cached {
	if now == nil {
		now = time.Now
	}
	return &Cached{Store: s, ttl: ttl, now: now, keys: map[string]cachedKey{}, teams: map[string]cachedTeam{}}
}

func (c *Cached) fresh(fetched time.Time) bool {
	age := c.now().Sub(fetched)
	return age >= 0 && age < c.ttl
}

// GetKey implements Store.
func (c *Cached) GetKey(ctx context.Context, hash string) (Key, error) {
	c.mu.Lock()
	e, ok := c.keys[hash]
	c.mu.Unlock()
	if ok && c.fresh(e.fetched) {
		return cloneKey(e.k), e.err
	}
	fetched := c.now()
	k, err := c.Store.GetKey(ctx, hash)
	if err == nil || errors.Is(err, ErrNotFound) {
		c.mu.Lock()
		if len(c.keys) >= maxCached {
			clear(c.keys)
		}
		c.keys[hash] = cachedKey{cloneKey(k), err, fetched}
		c.mu.Unlock()
	}
	return k, err
}

// GetTeam implements Store.
func (c *Cached) GetTeam(ctx context.Context, id string) (Team, error) {
	c.mu.Lock()
	e, ok := c.teams[id]
	c.mu.Unlock()
	if ok && c.fresh(e.fetched) {
		return cloneTeam(e.t), e.err
	}
	fetched := c.now()
	t, err := c.Store.GetTeam(ctx, id)
	if err == nil || errors.Is(err, ErrNotFound) {
		c.mu.Lock()
		if len(c.teams) >= maxCached {
			clear(c.teams)
		}
		c.teams[id] = cachedTeam{cloneTeam(t), err, fetched}
		c.mu.Unlock()
	}
	return t, err
}

func (c *Cached) dropKey(hash string) {
	c.mu.Lock()
	delete(c.keys, hash)
	c.mu.Unlock()
}

func (c *Cached) dropTeam(id string) {
	c.mu.Lock()
	delete(c.teams, id)
	c.mu.Unlock()
}

// CreateKey implements Store.
func (c *Cached) CreateKey(ctx context.Context, k Key) error {
	defer c.dropKey(k.Hash)
	return c.Store.CreateKey(ctx, k)
}

// UpdateKey implements Store.
func (c *Cached) UpdateKey(ctx context.Context, k Key) (Key, error) {
	defer c.dropKey(k.Hash)
	return c.Store.UpdateKey(ctx, k)
}

// DeleteKey implements Store.
func (c *Cached) DeleteKey(ctx context.Context, hash string) error {
	defer c.dropKey(hash)
	return c.Store.DeleteKey(ctx, hash)
}

// BlockKey implements Store.
func (c *Cached) BlockKey(ctx context.Context, hash string, blocked bool) error {
	defer c.dropKey(hash)
	return c.Store.BlockKey(ctx, hash, blocked)
}

// CreateTeam implements Store.
func (c *Cached) CreateTeam(ctx context.Context, t Team) error {
	defer c.dropTeam(t.ID)
	return c.Store.CreateTeam(ctx, t)
}

// UpdateTeam implements Store.
func (c *Cached) UpdateTeam(ctx context.Context, t Team) (Team, error) {
	defer c.dropTeam(t.ID)
	return c.Store.UpdateTeam(ctx, t)
}

// DeleteTeam implements Store.
func (c *Cached) DeleteTeam(ctx context.Context, id string) error {
	defer c.dropMemberships()
	return c.Store.DeleteTeam(ctx, id)
}

// BlockTeam implements Store.
func (c *Cached) BlockTeam(ctx context.Context, id string, blocked bool) error {
	defer c.dropTeam(id)
	return c.Store.BlockTeam(ctx, id, blocked)
}

// ApplySpend implements Store.
func (c *Cached) ApplySpend(ctx context.Context, deltas []SpendDelta) ([]Ref, error) {
	defer func() {
		for _, d := range deltas {
			c.drop(d.Ref)
		}
	}()
	return c.Store.ApplySpend(ctx, deltas)
}

// drop forgets what this instance read of r.
func (c *Cached) drop(r Ref) {
	switch r.Kind {
	case KindKey:
		c.dropKey(r.ID)
	case KindTeam:
		c.dropTeam(r.ID)
	case KindUser:
		c.admin.users.drop(r.ID)
	case KindMember:
		c.admin.members.drop(r.ID)
	case KindEndUser:
		c.admin.endUsers.drop(r.ID)
	}
}
