package keys

import (
	"context"
	"fmt"
	"slices"
)

// The memory store's organizations: the same shapes as teams (memory.go),
// with Organization.Teams kept by the team writes (moveTeam).

// GetOrganization implements Reader.
func (m *Memory) GetOrganization(_ context.Context, id string) (Organization, error) {
	return locked(m, func() (Organization, error) { return m.orgs.get(m, id, ValidOrgID(id)) })
}

// GetOrgMember implements Admin.
func (m *Memory) GetOrgMember(_ context.Context, org, user string) (OrgMembership, error) {
	return locked(m, func() (OrgMembership, error) {
		return m.orgMembers.get(m, OrgMemberID(org, user), ValidOrgMember(org, user))
	})
}

// CreateOrganization implements Admin.
func (m *Memory) CreateOrganization(_ context.Context, o Organization) error {
	return m.write(o, func() error {
		return m.orgs.create(m, o, func(o *Organization) error { o.Teams, o.Members = nil, nil; return nil })
	})
}

// UpdateOrganization implements Admin.
func (m *Memory) UpdateOrganization(_ context.Context, o Organization) (Organization, error) {
	return validated(m, o, func() (Organization, error) {
		return m.orgs.update(m, o, func(old Organization, o *Organization) error {
			o.Teams, o.Members, o.CreatedBy = old.Teams, old.Members, old.CreatedBy
			return nil
		})
	})
}

// ListOrganizations implements Admin.
func (m *Memory) ListOrganizations(context.Context) ([]Organization, error) {
	return locked(m, func() ([]Organization, error) { return m.orgs.list(m, nil), nil })
}

// moveTeam moves team from organization from to organization to ("":
// none) in the organizations' Teams; to must exist. m.mu is held.
func (m *Memory) moveTeam(team, from, to string) error {
	if from == to {
		return nil
	}
	if to != "" {
		if _, ok := m.orgs.m[to]; !ok {
			return NoOrganization(to)
		}
		m.orgs.change(to, func(o *Organization) {
			if !slices.Contains(o.Teams, team) {
				o.Teams = append(o.Teams, team)
				slices.Sort(o.Teams)
			}
		})
	}
	m.orgs.change(from, func(o *Organization) {
		o.Teams = slices.DeleteFunc(o.Teams, func(x string) bool { return x == team })
	})
	return nil
}

// ensureUser creates user as an internal_user with email unless it
// exists: a membership's user. m.mu is held.
func (m *Memory) ensureUser(user, email string) error {
	if _, ok := m.users.m[user]; ok {
		return nil
	}
	return m.createUser(User{ID: user, Email: email, Role: RoleInternalUser})
}

// AddOrgMember implements Admin.
func (m *Memory) AddOrgMember(_ context.Context, mb OrgMembership) error {
	return m.write(mb, func() error {
		if _, ok := m.orgs.m[mb.OrgID]; !ok {
			return notFound("organization", mb.OrgID)
		}
		id := OrgMemberID(mb.OrgID, mb.UserID)
		if _, ok := m.orgMembers.m[id]; ok {
			return fmt.Errorf("organization member %s: %w", id, ErrExists)
		}
		if err := m.ensureUser(mb.UserID, mb.Email); err != nil {
			return err
		}
		if err := m.orgMembers.create(m, mb, nil); err != nil {
			return err
		}
		m.orgs.change(mb.OrgID, func(o *Organization) {
			o.Members = append(o.Members, OrgMember{UserID: mb.UserID, Email: mb.Email, Role: mb.Role})
		})
		m.users.change(mb.UserID, func(u *User) { u.Organizations = append(u.Organizations, mb.OrgID) })
		return nil
	})
}

// UpdateOrgMember implements Admin.
func (m *Memory) UpdateOrgMember(_ context.Context, mb OrgMembership) (OrgMembership, error) {
	return validated(m, mb, func() (OrgMembership, error) {
		out, err := m.orgMembers.update(m, mb, nil)
		if err == nil {
			m.orgs.change(mb.OrgID, func(o *Organization) {
				for i := range o.Members {
					if o.Members[i].UserID == mb.UserID {
						o.Members[i].Role = mb.Role
					}
				}
			})
		}
		return out, err
	})
}

// RemoveOrgMember implements Admin.
func (m *Memory) RemoveOrgMember(_ context.Context, org, user string) error {
	return m.write(nil, func() error {
		if _, ok := m.orgs.m[org]; !ok || ValidOrgID(org) != nil {
			return notFound("organization", org)
		}
		if _, ok := m.orgMembers.m[OrgMemberID(org, user)]; !ok || ValidOrgMember(org, user) != nil {
			return notFound("organization member", OrgMemberID(org, user))
		}
		m.dropOrgMembership(org, user)
		return nil
	})
}

// dropOrgMembership removes user from org everywhere it is written. m.mu is held.
func (m *Memory) dropOrgMembership(org, user string) {
	m.orgMembers.remove(m, OrgMemberID(org, user))
	m.orgs.change(org, func(o *Organization) {
		o.Members = slices.DeleteFunc(o.Members, func(x OrgMember) bool { return x.UserID == user })
	})
	m.users.change(user, func(u *User) {
		u.Organizations = slices.DeleteFunc(u.Organizations, func(x string) bool { return x == org })
	})
}

// deleteOrg deletes an organization that has no teams, with its
// memberships. m.mu is held.
func (m *Memory) deleteOrg(id string) error {
	o, ok := m.orgs.m[id]
	if !ok {
		return notFound("organization", id)
	}
	if len(o.Teams) > 0 {
		return fmt.Errorf("organization %s (teams %v): %w", short(id), o.Teams, ErrOrgHasTeams)
	}
	for _, mb := range o.Members {
		m.dropOrgMembership(id, mb.UserID)
	}
	m.orgs.remove(m, id)
	return nil
}
