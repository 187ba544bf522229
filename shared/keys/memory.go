package keys

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Memory is the in-process store for local mode and unit tests.
type Memory struct {
	mu    sync.Mutex
	now   func() time.Time
	keys  map[string]Key
	teams map[string]Team
	spend map[Ref]SpendState // absent: nothing spent yet
	admin                    // users, members, end users, aliases, deleted keys (memory_admin.go)
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty memory store.
func NewMemory() *Memory {
	return &Memory{now: time.Now, keys: map[string]Key{}, teams: map[string]Team{}, spend: map[Ref]SpendState{}, admin: newAdmin()}
}

func cloneKey(k Key) Key {
	k.Models = slices.Clone(k.Models)
	k.Tags = slices.Clone(k.Tags)
	k.Metadata = slices.Clone(k.Metadata)
	k.Budget = cloneBudget(k.Budget)
	return k
}

func cloneTeam(t Team) Team {
	t.Models = slices.Clone(t.Models)
	t.Members = slices.Clone(t.Members)
	t.Metadata = slices.Clone(t.Metadata)
	t.Budget = cloneBudget(t.Budget)
	return t
}

func notFound(what, id string) error { return fmt.Errorf("%s %s: %w", what, short(id), ErrNotFound) }

// GetKey implements Store.
func (m *Memory) GetKey(_ context.Context, hash string) (Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[hash]
	if !ok {
		return Key{}, notFound("key", hash)
	}
	m.fill(Ref{KindKey, hash}, &k.Budget)
	return cloneKey(k), nil
}

// CreateKey implements Store.
func (m *Memory) CreateKey(_ context.Context, k Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[k.Hash]; ok {
		return fmt.Errorf("key %s: %w", short(k.Hash), ErrExists)
	}
	if err := m.takeAlias(k.Alias, k.Hash); err != nil {
		return err
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = m.now().UTC().Truncate(time.Millisecond)
	}
	k.Budget.clearSpend()
	m.keys[k.Hash] = cloneKey(k.normalize())
	return nil
}

// UpdateKey implements Store.
func (m *Memory) UpdateKey(_ context.Context, k Key) (Key, error) {
	if err := k.Validate(); err != nil {
		return Key{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.keys[k.Hash]
	if !ok {
		return Key{}, notFound("key", k.Hash)
	}
	if k.Alias != old.Alias {
		if err := m.takeAlias(k.Alias, k.Hash); err != nil {
			return Key{}, err
		}
		delete(m.aliases, old.Alias)
	}
	k.CreatedAt, k.CreatedBy = old.CreatedAt, old.CreatedBy
	k.Budget.clearSpend()
	k = k.normalize()
	m.keys[k.Hash] = cloneKey(k)
	m.fill(Ref{KindKey, k.Hash}, &k.Budget)
	return cloneKey(k), nil
}

// DeleteKey implements Store: ArchiveKey by nobody known.
func (m *Memory) DeleteKey(ctx context.Context, hash string) error {
	_, err := m.ArchiveKey(ctx, hash, "")
	return err
}

// BlockKey implements Store.
func (m *Memory) BlockKey(_ context.Context, hash string, blocked bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[hash]
	if !ok {
		return notFound("key", hash)
	}
	k.Blocked = blocked
	m.keys[hash] = k
	return nil
}

// GetTeam implements Store.
func (m *Memory) GetTeam(_ context.Context, id string) (Team, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.teams[id]
	if !ok {
		return Team{}, notFound("team", id)
	}
	m.fill(Ref{KindTeam, id}, &t.Budget)
	return cloneTeam(t), nil
}

// CreateTeam implements Store.
func (m *Memory) CreateTeam(_ context.Context, t Team) error {
	if err := t.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.teams[t.ID]; ok {
		return fmt.Errorf("team %s: %w", short(t.ID), ErrExists)
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = m.now().UTC().Truncate(time.Millisecond)
	}
	t.Members = nil
	t.Budget.clearSpend()
	m.teams[t.ID] = cloneTeam(t.normalize())
	return nil
}

// UpdateTeam implements Store.
func (m *Memory) UpdateTeam(_ context.Context, t Team) (Team, error) {
	if err := t.Validate(); err != nil {
		return Team{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.teams[t.ID]
	if !ok {
		return Team{}, notFound("team", t.ID)
	}
	t.CreatedAt, t.Members = old.CreatedAt, old.Members
	t.Budget.clearSpend()
	t = t.normalize()
	m.teams[t.ID] = cloneTeam(t)
	m.fill(Ref{KindTeam, t.ID}, &t.Budget)
	return cloneTeam(t), nil
}

// DeleteTeam implements Store.
func (m *Memory) DeleteTeam(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.teams[id]
	if !ok {
		return notFound("team", id)
	}
	for _, mb := range t.Members {
		m.dropMembership(id, mb.UserID)
	}
	delete(m.teams, id)
	delete(m.spend, Ref{KindTeam, id})
	return nil
}

// BlockTeam implements Store.
func (m *Memory) BlockTeam(_ context.Context, id string, blocked bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.teams[id]
	if !ok {
		return notFound("team", id)
	}
	t.Blocked = blocked
	m.teams[id] = t
	return nil
}
