package keys

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Cached serves a store's reads (Reader) from a per-instance cache for a
// short TTL (not-found answers included, so a flood of unknown keys does
// not reach the store). Writes go to the store and drop the local entries
// they change. The cache only spares reads of settings; the gateway checks
// blocked, expiry and budget from what it reads.
type Cached struct {
	store // writes and ApplySpend go straight through

	ttl time.Duration
	now func() time.Time

	keys     readCache[Key, *Key]
	teams    readCache[Team, *Team]
	users    readCache[User, *User]
	members  readCache[Member, *Member] // by Ref string
	endUsers readCache[EndUser, *EndUser]
	orgs     readCache[Organization, *Organization]
	budgets  readCache[BudgetRecord, *BudgetRecord]

	presentMu sync.Mutex
	present   entry[bool] // HasEndUsers; fetched 0: not read

	records cachedRecords // the store's Records, forgetting what they write
}

// store is what Cached wraps: a store the admin API writes and the spend
// consumer records to.
type store interface {
	Admin
	Spender
}

var (
	_ Admin   = (*Cached)(nil)
	_ Spender = (*Cached)(nil)
)

// maxCached bounds each cache; past it the cache is cleared.
const maxCached = 100_000

// NewCached wraps s with a cache of reads for ttl, timed by now (nil: time.Now).
func NewCached(s store, ttl time.Duration, now func() time.Time) *Cached {
	if now == nil {
		now = time.Now
	}
	c := &Cached{store: s, ttl: ttl, now: now}
	c.records = c.newRecords()
	return c
}

// entry is one cached read.
type entry[T any] struct {
	v       T
	err     error
	fetched int64  // UnixNano of the clock when read
	b       Budget // v's budget, as stored (localspend.go)
}

// readCache caches one kind of record.
type readCache[T any, P record[T]] struct {
	mu   sync.Mutex
	m    map[string]entry[T]
	pend map[string]pending // this instance's costs the store does not show yet (localspend.go)
}

// fresh reports whether a read at fetched is still served.
func (c *Cached) fresh(e entry[bool]) bool {
	age := c.now().UnixNano() - e.fetched
	return e.fetched != 0 && age >= 0 && age < int64(c.ttl)
}

// get returns the record id from the cache, else from read, and the costs
// this instance added to it that the store may not show yet (pending's
// show adds them: the caller's, on its concrete type, so that a warm read
// takes no record's address through the type parameter and allocates
// nothing more).
func (rc *readCache[T, P]) get(c *Cached, id string, read func() (T, error)) (T, pending, error) {
	rc.mu.Lock()
	e, ok := rc.m[id]
	p := rc.pend[id]
	rc.mu.Unlock()
	if ok && c.fresh(entry[bool]{fetched: e.fetched}) {
		return clone[T, P](e.v), p, e.err
	}
	fetched := c.now().UnixNano()
	v, err := read()
	if err == nil || errors.Is(err, ErrNotFound) {
		b := P(&v).settings().Budget
		rc.mu.Lock()
		if rc.m == nil || len(rc.m) >= maxCached {
			rc.m, rc.pend = map[string]entry[T]{}, nil
		}
		rc.m[id] = entry[T]{clone[T, P](v), err, fetched, b}
		p = rc.pend[id]
		if p.last != 0 && (err != nil || p.caughtUp(&b, fetched)) {
			delete(rc.pend, id) // the store shows it now (or the record is gone)
			p = pending{}
		}
		rc.mu.Unlock()
	}
	return v, p, err
}

func (rc *readCache[T, P]) drop(id string) {
	rc.mu.Lock()
	delete(rc.m, id)
	rc.mu.Unlock()
}

func (rc *readCache[T, P]) clear() {
	rc.mu.Lock()
	rc.m = nil
	rc.mu.Unlock()
}

// GetKey implements Reader, from the cache.
func (c *Cached) GetKey(ctx context.Context, hash string) (Key, error) {
	k, p, err := c.keys.get(c, hash, func() (Key, error) { return c.store.GetKey(ctx, hash) })
	c.show(p, &k.Budget)
	return k, err
}

// GetTeam implements Reader, from the cache.
func (c *Cached) GetTeam(ctx context.Context, id string) (Team, error) {
	t, p, err := c.teams.get(c, id, func() (Team, error) { return c.store.GetTeam(ctx, id) })
	c.show(p, &t.Budget)
	return t, err
}

// GetUser implements Reader, from the cache.
func (c *Cached) GetUser(ctx context.Context, id string) (User, error) {
	u, p, err := c.users.get(c, id, func() (User, error) { return c.store.GetUser(ctx, id) })
	c.show(p, &u.Budget)
	return u, err
}

// GetMember implements Reader, from the cache.
func (c *Cached) GetMember(ctx context.Context, g Kind, id, user string) (Member, error) {
	// the key is MemberRef(g, id, user).String(), in one allocation
	key := string(groupKinds[g].member) + "#" + id + "#" + user
	m, _, err := c.members.get(c, key, func() (Member, error) { return c.store.GetMember(ctx, g, id, user) })
	return m, err
}

// GetEndUser implements Reader, from the cache.
func (c *Cached) GetEndUser(ctx context.Context, id string) (EndUser, error) {
	e, _, err := c.endUsers.get(c, id, func() (EndUser, error) { return c.store.GetEndUser(ctx, id) })
	return e, err
}

// GetBudget implements Reader, from the cache.
func (c *Cached) GetBudget(ctx context.Context, id string) (BudgetRecord, error) {
	b, _, err := c.budgets.get(c, id, func() (BudgetRecord, error) { return c.store.GetBudget(ctx, id) })
	return b, err
}

// HasEndUsers implements Reader, from the cache.
func (c *Cached) HasEndUsers(ctx context.Context) (bool, error) {
	c.presentMu.Lock()
	e := c.present
	c.presentMu.Unlock()
	if c.fresh(e) {
		return e.v, e.err
	}
	fetched := c.now().UnixNano()
	v, err := c.store.HasEndUsers(ctx)
	if err == nil {
		c.presentMu.Lock()
		c.present = entry[bool]{v: v, fetched: fetched}
		c.presentMu.Unlock()
	}
	return v, err
}

func (c *Cached) dropPresent() {
	c.presentMu.Lock()
	c.present = entry[bool]{}
	c.presentMu.Unlock()
}

// drop forgets what this instance read of r.
func (c *Cached) drop(r Ref) {
	switch r.Kind {
	case KindKey:
		c.keys.drop(r.ID)
	case KindTeam:
		c.teams.drop(r.ID)
	case KindUser:
		c.users.drop(r.ID)
	case KindMember, KindOrgMember:
		c.members.drop(r.String())
	case KindEndUser:
		c.endUsers.drop(r.ID)
	case KindOrg:
		c.orgs.drop(r.ID)
	case KindBudget:
		c.budgets.drop(r.ID)
	}
}

// dropMember forgets the group, user and membership a membership change
// touches.
func (c *Cached) dropMember(g Kind, id, user string) {
	c.drop(Ref{g, id})
	c.drop(Ref{KindUser, user})
	c.drop(MemberRef(g, id, user))
}

// dropMemberships forgets every team, user and membership read: deleting a
// user or a team changes several of them.
func (c *Cached) dropMemberships() {
	c.teams.clear()
	c.users.clear()
	c.members.clear()
	c.orgs.clear()
}

// after runs write, then forgets refs.
func after[R any](c *Cached, write func() (R, error), refs ...Ref) (R, error) {
	defer func() {
		for _, r := range refs {
			c.drop(r)
		}
	}()
	return write()
}

// CreateKey implements Admin.
func (c *Cached) CreateKey(ctx context.Context, k Key) error {
	defer c.drop(k.ref())
	return c.store.CreateKey(ctx, k)
}

// UpdateKey implements Admin.
func (c *Cached) UpdateKey(ctx context.Context, k Key) (Key, error) {
	return after(c, func() (Key, error) { return c.store.UpdateKey(ctx, k) }, k.ref())
}

// ArchiveKey implements Admin.
func (c *Cached) ArchiveKey(ctx context.Context, hash, by string) (Key, error) {
	return after(c, func() (Key, error) { return c.store.ArchiveKey(ctx, hash, by) }, Ref{KindKey, hash})
}

// RegenerateKey implements Admin.
func (c *Cached) RegenerateKey(ctx context.Context, oldHash string, k Key) (Key, error) {
	return after(c, func() (Key, error) { return c.store.RegenerateKey(ctx, oldHash, k) }, Ref{KindKey, oldHash}, k.ref())
}

// AddMember implements Admin.
func (c *Cached) AddMember(ctx context.Context, m Member) error {
	defer c.dropMember(m.Group, m.GroupID, m.UserID)
	return c.store.AddMember(ctx, m)
}

// UpdateMember implements Admin.
func (c *Cached) UpdateMember(ctx context.Context, m Member) (Member, error) {
	defer c.dropMember(m.Group, m.GroupID, m.UserID)
	return c.store.UpdateMember(ctx, m)
}

// RemoveMember implements Admin.
func (c *Cached) RemoveMember(ctx context.Context, g Kind, id, user string) error {
	defer c.dropMember(g, id, user)
	return c.store.RemoveMember(ctx, g, id, user)
}

// DeleteBudget implements Admin.
func (c *Cached) DeleteBudget(ctx context.Context, id string) error {
	defer c.drop(Ref{KindBudget, id})
	return c.store.DeleteBudget(ctx, id)
}

// Block implements Admin.
func (c *Cached) Block(ctx context.Context, r Ref, blocked bool) error {
	defer c.drop(r)
	return c.store.Block(ctx, r, blocked)
}

// Delete implements Admin.
func (c *Cached) Delete(ctx context.Context, r Ref) error {
	switch r.Kind {
	case KindTeam, KindUser, KindOrg:
		defer c.dropMemberships()
	case KindEndUser:
		defer c.dropPresent()
		defer c.drop(r)
	default:
		defer c.drop(r)
	}
	return c.store.Delete(ctx, r)
}

// ApplySpend implements Spender.
func (c *Cached) ApplySpend(ctx context.Context, deltas []SpendDelta) ([]Ref, error) {
	defer func() {
		for _, d := range deltas {
			c.drop(d.Ref)
		}
	}()
	return c.store.ApplySpend(ctx, deltas)
}
