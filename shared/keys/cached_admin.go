package keys

import (
	"context"
	"errors"
	"sync"
)

// entry is one cached read.
type entry[T any] struct {
	v       T
	err     error
	fetched int64 // UnixNano of the clock when read
}

// readCache caches one kind of record for Cached, with its TTL and clock.
type readCache[T any] struct {
	mu sync.Mutex
	m  map[string]entry[T]
}

func (rc *readCache[T]) get(c *Cached, id string, clone func(T) T, read func() (T, error)) (T, error) {
	rc.mu.Lock()
	e, ok := rc.m[id]
	rc.mu.Unlock()
	if ok && c.ttl > 0 {
		age := c.now().UnixNano() - e.fetched
		if age >= 0 && age < int64(c.ttl) {
			return clone(e.v), e.err
		}
	}
	fetched := c.now().UnixNano()
	v, err := read()
	if err == nil || errors.Is(err, ErrNotFound) {
		rc.mu.Lock()
		if rc.m == nil || len(rc.m) >= maxCached {
			rc.m = map[string]entry[T]{}
		}
		rc.m[id] = entry[T]{clone(v), err, fetched}
		rc.mu.Unlock()
	}
	return v, err
}

func (rc *readCache[T]) drop(id string) {
	rc.mu.Lock()
	delete(rc.m, id)
	rc.mu.Unlock()
}

func (rc *readCache[T]) clear() {
	rc.mu.Lock()
	rc.m = nil
	rc.mu.Unlock()
}

// adminCaches are Cached's caches of users, team members and end users.
type adminCaches struct {
	users    readCache[User]
	members  readCache[Member]
	endUsers readCache[EndUser]
	present  readCache[bool] // HasEndUsers, under ""
}

// GetUser implements AdminStore, from the cache.
func (c *Cached) GetUser(ctx context.Context, id string) (User, error) {
	return c.admin.users.get(c, id, cloneUser, func() (User, error) { return c.Store.GetUser(ctx, id) })
}

// GetMember implements AdminStore, from the cache.
func (c *Cached) GetMember(ctx context.Context, team, user string) (Member, error) {
	return c.admin.members.get(c, MemberID(team, user), cloneMember, func() (Member, error) { return c.Store.GetMember(ctx, team, user) })
}

// GetEndUser implements AdminStore, from the cache.
func (c *Cached) GetEndUser(ctx context.Context, id string) (EndUser, error) {
	return c.admin.endUsers.get(c, id, cloneEndUser, func() (EndUser, error) { return c.Store.GetEndUser(ctx, id) })
}

// ArchiveKey implements AdminStore.
func (c *Cached) ArchiveKey(ctx context.Context, hash, by string) (Key, error) {
	defer c.dropKey(hash)
	return c.Store.ArchiveKey(ctx, hash, by)
}

// RegenerateKey implements AdminStore.
func (c *Cached) RegenerateKey(ctx context.Context, oldHash string, k Key) (Key, error) {
	defer c.dropKey(oldHash)
	defer c.dropKey(k.Hash)
	return c.Store.RegenerateKey(ctx, oldHash, k)
}

// CreateUser implements AdminStore.
func (c *Cached) CreateUser(ctx context.Context, u User) error {
	defer c.admin.users.drop(u.ID)
	return c.Store.CreateUser(ctx, u)
}

// UpdateUser implements AdminStore.
func (c *Cached) UpdateUser(ctx context.Context, u User) (User, error) {
	defer c.admin.users.drop(u.ID)
	return c.Store.UpdateUser(ctx, u)
}

// DeleteUser implements AdminStore.
func (c *Cached) DeleteUser(ctx context.Context, id string) error {
	defer c.dropMemberships()
	return c.Store.DeleteUser(ctx, id)
}

// AddMember implements AdminStore.
func (c *Cached) AddMember(ctx context.Context, m Member) error {
	defer c.dropMember(m.TeamID, m.UserID)
	return c.Store.AddMember(ctx, m)
}

// UpdateMember implements AdminStore.
func (c *Cached) UpdateMember(ctx context.Context, m Member) (Member, error) {
	defer c.dropMember(m.TeamID, m.UserID)
	return c.Store.UpdateMember(ctx, m)
}

// RemoveMember implements AdminStore.
func (c *Cached) RemoveMember(ctx context.Context, team, user string) error {
	defer c.dropMember(team, user)
	return c.Store.RemoveMember(ctx, team, user)
}

// CreateEndUser implements AdminStore.
func (c *Cached) CreateEndUser(ctx context.Context, e EndUser) error {
	defer c.admin.present.drop("")
	defer c.admin.endUsers.drop(e.ID)
	return c.Store.CreateEndUser(ctx, e)
}

// UpdateEndUser implements AdminStore.
func (c *Cached) UpdateEndUser(ctx context.Context, e EndUser) (EndUser, error) {
	defer c.admin.endUsers.drop(e.ID)
	return c.Store.UpdateEndUser(ctx, e)
}

// DeleteEndUser implements AdminStore.
func (c *Cached) DeleteEndUser(ctx context.Context, id string) error {
	defer c.admin.present.drop("")
	defer c.admin.endUsers.drop(id)
	return c.Store.DeleteEndUser(ctx, id)
}

// BlockEndUser implements AdminStore.
func (c *Cached) BlockEndUser(ctx context.Context, id string, blocked bool) error {
	defer c.admin.endUsers.drop(id)
	return c.Store.BlockEndUser(ctx, id, blocked)
}

func (c *Cached) dropMember(team, user string) {
	c.dropTeam(team)
	c.admin.users.drop(user)
	c.admin.members.drop(MemberID(team, user))
}

// dropMemberships forgets every team, user and membership read: deleting a
// user or a team changes several of them.
func (c *Cached) dropMemberships() {
	c.mu.Lock()
	clear(c.teams)
	c.mu.Unlock()
	c.admin.users.clear()
	c.admin.members.clear()
}

// HasEndUsers implements AdminStore, from the cache.
func (c *Cached) HasEndUsers(ctx context.Context) (bool, error) {
	return c.admin.present.get(c, "", func(b bool) bool { return b }, func() (bool, error) { return c.Store.HasEndUsers(ctx) })
}
