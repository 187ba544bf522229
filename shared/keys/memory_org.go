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
	m.dropMembers(KindOrg, id, o.Members)
	m.orgs.remove(m, id)
	return nil
}
