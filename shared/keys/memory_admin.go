package keys

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// admin is the Memory store's state for AdminStore. Guarded by Memory.mu.
type admin struct {
	users    map[string]User
	members  map[string]Member // by MemberID
	endUsers map[string]EndUser
	aliases  map[string]string // key_alias -> key hash
	deleted  []DeletedKey
	moved    map[string]Move // a regenerated key's old hash -> where it went (moves.go)
}

func newAdmin() admin {
	return admin{users: map[string]User{}, members: map[string]Member{}, endUsers: map[string]EndUser{}, aliases: map[string]string{}, moved: map[string]Move{}}
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

// GetKeyByAlias implements AdminStore.
func (m *Memory) GetKeyByAlias(ctx context.Context, alias string) (Key, error) {
	m.mu.Lock()
	h, ok := m.aliases[alias]
	m.mu.Unlock()
	if !ok || alias == "" {
		return Key{}, fmt.Errorf("key alias %q: %w", short(alias), ErrNotFound)
	}
	return m.GetKey(ctx, h)
}

// ArchiveKey implements AdminStore.
func (m *Memory) ArchiveKey(_ context.Context, hash, by string) (Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[hash]
	if !ok {
		return Key{}, notFound("key", hash)
	}
	m.fill(Ref{KindKey, hash}, &k.Budget)
	delete(m.keys, hash)
	delete(m.spend, Ref{KindKey, hash})
	if k.Alias != "" && m.aliases[k.Alias] == hash {
		delete(m.aliases, k.Alias)
	}
	m.deleted = append(m.deleted, DeletedKey{Key: cloneKey(k), DeletedAt: m.now().UTC().Truncate(time.Millisecond), DeletedBy: by})
	return cloneKey(k), nil
}

// RegenerateKey implements AdminStore.
func (m *Memory) RegenerateKey(_ context.Context, oldHash string, k Key) (Key, error) {
	if err := k.Validate(); err != nil {
		return Key{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.keys[oldHash]
	if !ok {
		return Key{}, notFound("key", oldHash)
	}
	if _, ok := m.keys[k.Hash]; ok {
		return Key{}, fmt.Errorf("key %s: %w", short(k.Hash), ErrExists)
	}
	if k.Alias != old.Alias {
		if err := m.takeAlias(k.Alias, k.Hash); err != nil {
			return Key{}, err
		}
		delete(m.aliases, old.Alias)
	} else if k.Alias != "" {
		m.aliases[k.Alias] = k.Hash
	}
	k.CreatedAt, k.CreatedBy = old.CreatedAt, old.CreatedBy
	k.Budget.clearSpend()
	k = k.normalize()
	delete(m.keys, oldHash)
	m.keys[k.Hash] = cloneKey(k)
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
	m.fill(Ref{KindKey, k.Hash}, &k.Budget)
	return cloneKey(k), nil
}

// ListKeys implements AdminStore.
func (m *Memory) ListKeys(_ context.Context, f KeyFilter) ([]Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Key
	for h, k := range m.keys {
		if f.Match(k) {
			m.fill(Ref{KindKey, h}, &k.Budget)
			out = append(out, cloneKey(k))
		}
	}
	SortKeys(out)
	return out, nil
}

// ListDeletedKeys implements AdminStore.
func (m *Memory) ListDeletedKeys(_ context.Context, f KeyFilter) ([]DeletedKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []DeletedKey
	for _, d := range m.deleted {
		if f.Match(d.Key) {
			d.Key = cloneKey(d.Key)
			out = append(out, d)
		}
	}
	return out, nil
}

// ListTeams implements AdminStore.
func (m *Memory) ListTeams(_ context.Context) ([]Team, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Team, 0, len(m.teams))
	for _, id := range slices.Sorted(maps.Keys(m.teams)) {
		t := m.teams[id]
		m.fill(Ref{KindTeam, id}, &t.Budget)
		out = append(out, cloneTeam(t))
	}
	return out, nil
}

// GetUser implements AdminStore.
func (m *Memory) GetUser(_ context.Context, id string) (User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok {
		return User{}, notFound("user", id)
	}
	m.fill(Ref{KindUser, id}, &u.Budget)
	return cloneUser(u), nil
}

// CreateUser implements AdminStore.
func (m *Memory) CreateUser(_ context.Context, u User) error {
	if err := u.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.createUser(u)
}

func (m *Memory) createUser(u User) error {
	if _, ok := m.users[u.ID]; ok {
		return fmt.Errorf("user %s: %w", short(u.ID), ErrExists)
	}
	if u.CreatedAt.IsZero() {
		u.CreatedAt = m.now()
	}
	if u.Role == "" {
		u.Role = RoleInternalUser
	}
	u.Teams = nil
	u.Budget.clearSpend()
	m.users[u.ID] = cloneUser(u.normalize())
	return nil
}

// UpdateUser implements AdminStore.
func (m *Memory) UpdateUser(_ context.Context, u User) (User, error) {
	if err := u.Validate(); err != nil {
		return User{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.users[u.ID]
	if !ok {
		return User{}, notFound("user", u.ID)
	}
	u.CreatedAt, u.Teams = old.CreatedAt, old.Teams
	if u.Role == "" {
		u.Role = old.Role
	}
	u.Budget.clearSpend()
	u = u.normalize()
	m.users[u.ID] = cloneUser(u)
	m.fill(Ref{KindUser, u.ID}, &u.Budget)
	return cloneUser(u), nil
}

// DeleteUser implements AdminStore.
func (m *Memory) DeleteUser(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok {
		return notFound("user", id)
	}
	for _, team := range u.Teams {
		m.dropMembership(team, id)
	}
	delete(m.users, id)
	delete(m.spend, Ref{KindUser, id})
	return nil
}

// ListUsers implements AdminStore.
func (m *Memory) ListUsers(_ context.Context) ([]User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]User, 0, len(m.users))
	for _, id := range slices.Sorted(maps.Keys(m.users)) {
		u := m.users[id]
		m.fill(Ref{KindUser, id}, &u.Budget)
		out = append(out, cloneUser(u))
	}
	return out, nil
}

// GetMember implements AdminStore.
func (m *Memory) GetMember(_ context.Context, team, user string) (Member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := MemberID(team, user)
	mb, ok := m.members[id]
	if !ok {
		return Member{}, notFound("member", id)
	}
	m.fill(Ref{KindMember, id}, &mb.Budget)
	return cloneMember(mb), nil
}

// AddMember implements AdminStore.
func (m *Memory) AddMember(_ context.Context, mb Member) error {
	if err := mb.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.teams[mb.TeamID]
	if !ok {
		return notFound("team", mb.TeamID)
	}
	id := MemberID(mb.TeamID, mb.UserID)
	if _, ok := m.members[id]; ok {
		return fmt.Errorf("member %s: %w", id, ErrExists)
	}
	if _, ok := m.users[mb.UserID]; !ok {
		if err := m.createUser(User{ID: mb.UserID, Role: RoleInternalUser}); err != nil {
			return err
		}
	}
	if mb.CreatedAt.IsZero() {
		mb.CreatedAt = m.now()
	}
	mb.Budget.clearSpend()
	m.members[id] = cloneMember(mb.normalize())
	t.Members = append(slices.Clone(t.Members), TeamMember{UserID: mb.UserID, Role: mb.Role})
	m.teams[mb.TeamID] = t
	u := m.users[mb.UserID]
	u.Teams = append(slices.Clone(u.Teams), mb.TeamID)
	m.users[mb.UserID] = u
	return nil
}

// UpdateMember implements AdminStore.
func (m *Memory) UpdateMember(_ context.Context, mb Member) (Member, error) {
	if err := mb.Validate(); err != nil {
		return Member{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := MemberID(mb.TeamID, mb.UserID)
	old, ok := m.members[id]
	if !ok {
		return Member{}, notFound("member", id)
	}
	mb.CreatedAt = old.CreatedAt
	mb.Budget.clearSpend()
	m.members[id] = cloneMember(mb)
	if t, ok := m.teams[mb.TeamID]; ok {
		t.Members = slices.Clone(t.Members)
		for i := range t.Members {
			if t.Members[i].UserID == mb.UserID {
				t.Members[i].Role = mb.Role
			}
		}
		m.teams[mb.TeamID] = t
	}
	m.fill(Ref{KindMember, id}, &mb.Budget)
	return cloneMember(mb), nil
}

// RemoveMember implements AdminStore.
func (m *Memory) RemoveMember(_ context.Context, team, user string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.teams[team]; !ok {
		return notFound("team", team)
	}
	if _, ok := m.members[MemberID(team, user)]; !ok {
		return notFound("member", MemberID(team, user))
	}
	m.dropMembership(team, user)
	return nil
}

// dropMembership removes user from team everywhere it is written. m.mu is held.
func (m *Memory) dropMembership(team, user string) {
	id := MemberID(team, user)
	delete(m.members, id)
	delete(m.spend, Ref{KindMember, id})
	if t, ok := m.teams[team]; ok {
		t.Members = slices.DeleteFunc(slices.Clone(t.Members), func(x TeamMember) bool { return x.UserID == user })
		m.teams[team] = t
	}
	if u, ok := m.users[user]; ok {
		u.Teams = slices.DeleteFunc(slices.Clone(u.Teams), func(x string) bool { return x == team })
		m.users[user] = u
	}
}

// GetEndUser implements AdminStore.
func (m *Memory) GetEndUser(_ context.Context, id string) (EndUser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.endUsers[id]
	if !ok {
		return EndUser{}, notFound("end user", id)
	}
	m.fill(Ref{KindEndUser, id}, &e.Budget)
	return cloneEndUser(e), nil
}

// CreateEndUser implements AdminStore.
func (m *Memory) CreateEndUser(_ context.Context, e EndUser) error {
	if err := e.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.endUsers[e.ID]; ok {
		return fmt.Errorf("end user %s: %w", short(e.ID), ErrExists)
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = m.now()
	}
	e.Budget.clearSpend()
	m.endUsers[e.ID] = cloneEndUser(e.normalize())
	return nil
}

// UpdateEndUser implements AdminStore.
func (m *Memory) UpdateEndUser(_ context.Context, e EndUser) (EndUser, error) {
	if err := e.Validate(); err != nil {
		return EndUser{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.endUsers[e.ID]
	if !ok {
		return EndUser{}, notFound("end user", e.ID)
	}
	e.CreatedAt = old.CreatedAt
	e.Budget.clearSpend()
	e = e.normalize()
	m.endUsers[e.ID] = cloneEndUser(e)
	m.fill(Ref{KindEndUser, e.ID}, &e.Budget)
	return cloneEndUser(e), nil
}

// DeleteEndUser implements AdminStore.
func (m *Memory) DeleteEndUser(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.endUsers[id]; !ok {
		return notFound("end user", id)
	}
	delete(m.endUsers, id)
	delete(m.spend, Ref{KindEndUser, id})
	return nil
}

// BlockEndUser implements AdminStore.
func (m *Memory) BlockEndUser(_ context.Context, id string, blocked bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.endUsers[id]
	if !ok {
		return notFound("end user", id)
	}
	e.Blocked = blocked
	m.endUsers[id] = e
	return nil
}

// ListEndUsers implements AdminStore.
func (m *Memory) ListEndUsers(_ context.Context) ([]EndUser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]EndUser, 0, len(m.endUsers))
	for _, id := range slices.Sorted(maps.Keys(m.endUsers)) {
		e := m.endUsers[id]
		m.fill(Ref{KindEndUser, id}, &e.Budget)
		out = append(out, cloneEndUser(e))
	}
	return out, nil
}

// HasEndUsers implements AdminStore.
func (m *Memory) HasEndUsers(context.Context) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.endUsers) > 0, nil
}
