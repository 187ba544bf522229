package keys

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Memory is the in-process store for local mode and unit tests: one table
// per record kind (table.go), spend beside them (memory_spend.go).
type Memory struct {
	mu       sync.Mutex
	now      func() time.Time
	keys     table[Key, *Key]
	teams    table[Team, *Team]
	users    table[User, *User]
	members  map[Kind]*table[Member, *Member] // by group kind, then MemberID
	endUsers table[EndUser, *EndUser]
	orgs     table[Organization, *Organization]
	budgets  table[BudgetRecord, *BudgetRecord]
	spend    map[Ref]SpendState // absent: nothing spent yet
	aliases  map[string]string  // key_alias -> key hash
	deleted  []DeletedKey
	moved    map[string]Move        // a regenerated key's old hash -> where it went (moves.go)
	byKind   map[Kind]settingsTable // the tables of the kinds that carry spend
	records  memoryRecords          // the tables as Records (memory_records.go)
}

// settingsTable is what the spend side reads of a table.
type settingsTable interface {
	settingsOf(id string) (Settings, bool)
}

var (
	_ Admin   = (*Memory)(nil)
	_ Spender = (*Memory)(nil)
)

// NewMemory returns an empty memory store.
func NewMemory() *Memory {
	m := &Memory{
		now:  time.Now,
		keys: newTable[Key]("key"), teams: newTable[Team]("team"), users: newTable[User]("user"),
		endUsers: newTable[EndUser]("end user"), budgets: newTable[BudgetRecord]("budget"), orgs: newTable[Organization]("organization"),
		members: map[Kind]*table[Member, *Member]{},
		spend:   map[Ref]SpendState{}, aliases: map[string]string{}, moved: map[string]Move{},
	}
	for g, k := range groupKinds {
		t := newTable[Member](k.noun + " member")
		m.members[g] = &t
	}
	m.byKind = map[Kind]settingsTable{
		KindKey: &m.keys, KindTeam: &m.teams, KindUser: &m.users, KindEndUser: &m.endUsers, KindOrg: &m.orgs,
		KindMember: m.members[KindTeam], KindOrgMember: m.members[KindOrg],
	}
	m.records = m.newRecords()
	return m
}

// locked runs f with m.mu held.
func locked[R any](m *Memory, f func() (R, error)) (R, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return f()
}

// validated runs f with m.mu held if v is valid.
func validated[R any](m *Memory, v interface{ Validate() error }, f func() (R, error)) (R, error) {
	if err := v.Validate(); err != nil {
		var zero R
		return zero, err
	}
	return locked(m, f)
}

// write runs f with m.mu held if v is valid (v nil: no check).
func (m *Memory) write(v interface{ Validate() error }, f func() error) error {
	if v != nil {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return f()
}

// GetKey implements Reader.
func (m *Memory) GetKey(_ context.Context, hash string) (Key, error) {
	return locked(m, func() (Key, error) { return m.keys.get(m, hash) })
}

// GetTeam implements Reader.
func (m *Memory) GetTeam(_ context.Context, id string) (Team, error) {
	return locked(m, func() (Team, error) { return m.teams.get(m, id, ValidTeamID(id)) })
}

// GetUser implements Reader.
func (m *Memory) GetUser(_ context.Context, id string) (User, error) {
	return locked(m, func() (User, error) { return m.users.get(m, id, ValidID("user_id", id)) })
}

// GetEndUser implements Reader.
func (m *Memory) GetEndUser(_ context.Context, id string) (EndUser, error) {
	return locked(m, func() (EndUser, error) { return m.endUsers.get(m, id, ValidID("user_id", id)) })
}

// HasEndUsers implements Reader.
func (m *Memory) HasEndUsers(context.Context) (bool, error) {
	return locked(m, func() (bool, error) { return len(m.endUsers.m) > 0, nil })
}

// takeAlias reserves alias for hash. m.mu is held.
func (m *Memory) takeAlias(alias, hash string) error {
	if alias == "" {
		return nil
	}
	if h, ok := m.aliases[alias]; ok && h != hash {
		return fmt.Errorf("key alias %q: %w", alias, ErrAliasExists)
	}
	m.aliases[alias] = hash
	return nil
}

// moveAlias moves the alias of a key from old to k. m.mu is held.
func (m *Memory) moveAlias(old Key, k Key) error {
	if k.Alias != old.Alias {
		if err := m.takeAlias(k.Alias, k.Hash); err != nil {
			return err
		}
		delete(m.aliases, old.Alias)
	} else if k.Alias != "" {
		m.aliases[k.Alias] = k.Hash
	}
	return nil
}

// CreateKey implements Admin.
func (m *Memory) CreateKey(_ context.Context, k Key) error {
	return m.write(k, func() error {
		return m.keys.create(m, k, func(k *Key) error { return m.takeAlias(k.Alias, k.Hash) })
	})
}

// UpdateKey implements Admin.
func (m *Memory) UpdateKey(_ context.Context, k Key) (Key, error) {
	return validated(m, k, func() (Key, error) {
		return m.keys.update(m, k, func(old Key, k *Key) error {
			k.CreatedBy = old.CreatedBy
			return m.moveAlias(old, *k)
		})
	})
}

// GetKeyByAlias implements Admin.
func (m *Memory) GetKeyByAlias(_ context.Context, alias string) (Key, error) {
	return locked(m, func() (Key, error) {
		h, ok := m.aliases[alias]
		if !ok || ValidID("key_alias", alias) != nil {
			return Key{}, fmt.Errorf("key alias %q: %w", short(alias), ErrNotFound)
		}
		return m.keys.get(m, h)
	})
}

// ArchiveKey implements Admin.
func (m *Memory) ArchiveKey(_ context.Context, hash, by string) (Key, error) {
	return locked(m, func() (Key, error) {
		k, err := m.keys.get(m, hash)
		if err != nil {
			return Key{}, err
		}
		m.keys.remove(m, hash)
		if k.Alias != "" && m.aliases[k.Alias] == hash {
			delete(m.aliases, k.Alias)
		}
		m.deleted = append(m.deleted, DeletedKey{Key: clone(k), DeletedAt: ms(m.now()), DeletedBy: by})
		return k, nil
	})
}

// RegenerateKey implements Admin.
func (m *Memory) RegenerateKey(_ context.Context, oldHash string, k Key) (Key, error) {
	return validated(m, k, func() (Key, error) {
		old, ok := m.keys.m[oldHash]
		if !ok {
			return Key{}, notFound("key", oldHash)
		}
		if _, ok := m.keys.m[k.Hash]; ok {
			return Key{}, fmt.Errorf("key %s: %w", short(k.Hash), ErrExists)
		}
		if err := m.moveAlias(old, k); err != nil {
			return Key{}, err
		}
		k.CreatedAt, k.CreatedBy = old.CreatedAt, old.CreatedBy
		delete(m.keys.m, oldHash)
		m.keys.put(k)
		now := m.now()
		for h, mv := range m.moved { // tidy, as the table's TTL would
			if !mv.Live(now) {
				delete(m.moved, h)
			}
		}
		m.moved[oldHash] = Move{To: k.Hash, Expires: now.Add(MoveTTL)}
		if st, ok := m.spend[Ref{KindKey, oldHash}]; ok {
			m.spend[Ref{KindKey, k.Hash}] = st
			delete(m.spend, Ref{KindKey, oldHash})
		}
		return m.keys.get(m, k.Hash)
	})
}

// ListKeys implements Admin.
func (m *Memory) ListKeys(_ context.Context, f KeyFilter) ([]Key, error) {
	return locked(m, func() ([]Key, error) {
		out := m.keys.list(m, f.Match)
		if len(out) == 0 {
			return nil, nil
		}
		SortKeys(out)
		return out, nil
	})
}

// ListDeletedKeys implements Admin.
func (m *Memory) ListDeletedKeys(_ context.Context, f KeyFilter) ([]DeletedKey, error) {
	return locked(m, func() ([]DeletedKey, error) {
		var out []DeletedKey
		for _, d := range m.deleted {
			if f.Match(d.Key) {
				d.Key = clone(d.Key)
				out = append(out, d)
			}
		}
		return out, nil
	})
}

// createUser stores a new user. m.mu is held.
func (m *Memory) createUser(u User) error { return m.users.create(m, u, m.users.prepare) }

// Block implements Admin.
func (m *Memory) Block(_ context.Context, r Ref, blocked bool) error {
	return m.write(nil, func() error {
		switch r.Kind {
		case KindKey:
			return m.keys.setBlocked(r.ID, blocked)
		case KindTeam:
			return m.teams.setBlocked(r.ID, blocked)
		case KindEndUser:
			return m.endUsers.setBlocked(r.ID, blocked)
		}
		return fmt.Errorf("block %s: %w: only keys, teams and end users are blocked", r, ErrInvalid)
	})
}

// Delete implements Admin.
func (m *Memory) Delete(ctx context.Context, r Ref) error {
	if r.Kind == KindKey {
		_, err := m.ArchiveKey(ctx, r.ID, "")
		return err
	}
	return m.write(nil, func() error {
		switch r.Kind {
		case KindTeam:
			t, ok := m.teams.m[r.ID]
			if !ok {
				return notFound("team", r.ID)
			}
			m.dropMembers(KindTeam, r.ID, t.Members)
			_ = m.moveTeam(r.ID, t.OrganizationID, "")
			m.teams.remove(m, r.ID)
		case KindUser:
			u, ok := m.users.m[r.ID]
			if !ok {
				return notFound("user", r.ID)
			}
			for _, g := range Groups {
				for _, id := range *userGroups(&u, g) {
					m.dropMembership(g, id, r.ID)
				}
			}
			m.users.remove(m, r.ID)
		case KindEndUser:
			if _, ok := m.endUsers.m[r.ID]; !ok {
				return notFound("end user", r.ID)
			}
			m.endUsers.remove(m, r.ID)
		case KindOrg:
			return m.deleteOrg(r.ID)
		default:
			return fmt.Errorf("delete %s: %w: memberships end through RemoveMember", r, ErrInvalid)
		}
		return nil
	})
}
