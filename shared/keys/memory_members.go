package keys

import (
	"context"
	"slices"
)

// The memory store's memberships, of teams and organizations alike: the
// membership record (Memory.members), the group's Members and the user's
// list of its groups, changed together under Memory.mu.

// GetMember implements Reader.
func (m *Memory) GetMember(_ context.Context, g Kind, id, user string) (Member, error) {
	return locked(m, func() (Member, error) {
		if err := ValidMembership(g, id, user); err != nil {
			return Member{}, NoMember(g, id, user)
		}
		return m.members[g].get(m, MemberID(id, user))
	})
}

// AddMember implements Admin.
func (m *Memory) AddMember(_ context.Context, mb Member) error {
	return m.write(mb, func() error {
		mb = mb.Stored()
		if !m.groupExists(mb.Group, mb.GroupID) {
			return NoGroup(mb.Group, mb.GroupID)
		}
		if _, ok := m.members[mb.Group].m[MemberID(mb.GroupID, mb.UserID)]; ok {
			return MemberExists(mb.Group, mb.GroupID, mb.UserID)
		}
		if err := m.ensureUser(mb.UserID, mb.Email); err != nil {
			return err
		}
		if err := m.members[mb.Group].create(m, mb, nil); err != nil {
			return err
		}
		m.changeMembers(mb.Group, mb.GroupID, func(l []TeamMember) []TeamMember {
			return append(l, TeamMember{UserID: mb.UserID, Email: mb.Email, Role: mb.Role})
		})
		m.users.change(mb.UserID, func(u *User) { l := userGroups(u, mb.Group); *l = append(*l, mb.GroupID) })
		return nil
	})
}

// UpdateMember implements Admin.
func (m *Memory) UpdateMember(_ context.Context, mb Member) (Member, error) {
	return validated(m, mb, func() (Member, error) {
		out, err := m.members[mb.Group].update(m, mb.Stored(), nil)
		if err == nil {
			m.changeMembers(mb.Group, mb.GroupID, func(l []TeamMember) []TeamMember {
				for i := range l {
					if l[i].UserID == mb.UserID {
						l[i].Role = mb.Role
					}
				}
				return l
			})
		}
		return out, err
	})
}

// RemoveMember implements Admin.
func (m *Memory) RemoveMember(_ context.Context, g Kind, id, user string) error {
	return m.write(nil, func() error {
		if ValidMembership(g, id, user) != nil {
			return NoMember(g, id, user)
		}
		if !m.groupExists(g, id) {
			return NoGroup(g, id)
		}
		if _, ok := m.members[g].m[MemberID(id, user)]; !ok {
			return NoMember(g, id, user)
		}
		m.dropMembership(g, id, user)
		return nil
	})
}

// ensureUser creates user as an internal_user with email unless it
// exists: a membership's user. m.mu is held.
func (m *Memory) ensureUser(user, email string) error {
	if _, ok := m.users.m[user]; ok {
		return nil
	}
	return m.createUser(User{ID: user, Email: email, Role: RoleInternalUser})
}

// groupExists reports whether the group g id exists. m.mu is held.
func (m *Memory) groupExists(g Kind, id string) bool {
	var ok bool
	switch g {
	case KindTeam:
		_, ok = m.teams.m[id]
	case KindOrg:
		_, ok = m.orgs.m[id]
	}
	return ok
}

// changeMembers replaces the Members of the group g id by f's. m.mu is held.
func (m *Memory) changeMembers(g Kind, id string, f func([]TeamMember) []TeamMember) {
	switch g {
	case KindTeam:
		m.teams.change(id, func(t *Team) { t.Members = f(t.Members) })
	case KindOrg:
		m.orgs.change(id, func(o *Organization) { o.Members = f(o.Members) })
	}
}

// userGroups is the list of u's groups of kind g.
func userGroups(u *User, g Kind) *[]string {
	if g == KindOrg {
		return &u.Organizations
	}
	return &u.Teams
}

// dropMembership removes user from the group g id everywhere it is
// written. m.mu is held.
func (m *Memory) dropMembership(g Kind, id, user string) {
	m.members[g].remove(m, MemberID(id, user))
	m.changeMembers(g, id, func(l []TeamMember) []TeamMember {
		return slices.DeleteFunc(l, func(x TeamMember) bool { return x.UserID == user })
	})
	m.users.change(user, func(u *User) {
		l := userGroups(u, g)
		*l = slices.DeleteFunc(*l, func(x string) bool { return x == id })
	})
}

// dropMembers ends the memberships of members in the group g id. m.mu is held.
func (m *Memory) dropMembers(g Kind, id string, members []TeamMember) {
	for _, mb := range members {
		m.dropMembership(g, id, mb.UserID)
	}
}
