package keys

import (
	"context"
)

// The memory store's Records: one generic writer of a table, and what each
// kind's writes do beyond the table (its prepare and keep).

// memRecords writes the records of table t of m.
type memRecords[T any, P record[T]] struct {
	m *Memory
	t *table[T, P]
}

// Create implements Records.
func (r memRecords[T, P]) Create(_ context.Context, v T) error {
	return r.m.write(P(&v), func() error { return r.t.create(r.m, v, r.t.prepare) })
}

// Update implements Records.
func (r memRecords[T, P]) Update(_ context.Context, v T) (T, error) {
	return validated(r.m, P(&v), func() (T, error) { return r.t.update(r.m, v, r.t.keep) })
}

// List implements Records.
func (r memRecords[T, P]) List(context.Context) ([]T, error) {
	return locked(r.m, func() ([]T, error) { return r.t.list(r.m, nil), nil })
}

// memoryRecords are the Records of Memory's tables, made once (a Records
// in an interface is not made again on each call).
type memoryRecords struct {
	teams    Records[Team]
	users    Records[User]
	endUsers Records[EndUser]
	orgs     Records[Organization]
	budgets  Records[BudgetRecord]
}

// newRecords sets each kind's prepare and keep and returns the Records.
func (m *Memory) newRecords() memoryRecords {
	m.teams.prepare = func(t *Team) error {
		t.Members = nil
		return m.moveTeam(t.ID, "", t.OrganizationID)
	}
	m.teams.keep = func(old Team, t *Team) error {
		t.Members = old.Members
		return m.moveTeam(t.ID, old.OrganizationID, t.OrganizationID)
	}
	m.users.prepare = func(u *User) error {
		if u.Role == "" {
			u.Role = RoleInternalUser
		}
		u.Teams = nil
		return nil
	}
	m.users.keep = func(old User, u *User) error {
		u.Teams = old.Teams
		if u.Role == "" {
			u.Role = old.Role
		}
		return nil
	}
	m.orgs.prepare = func(o *Organization) error { o.Teams, o.Members = nil, nil; return nil }
	m.orgs.keep = func(old Organization, o *Organization) error {
		o.Teams, o.Members, o.CreatedBy = old.Teams, old.Members, old.CreatedBy
		return nil
	}
	m.budgets.prepare = func(b *BudgetRecord) error {
		if b.UpdatedAt.IsZero() {
			b.UpdatedAt = b.CreatedAt
		}
		b.Settings = b.Limits()
		return nil
	}
	m.budgets.keep = func(old BudgetRecord, b *BudgetRecord) error {
		b.CreatedBy = old.CreatedBy
		b.Settings = b.Limits()
		return nil
	}
	return memoryRecords{
		teams:    memRecords[Team, *Team]{m, &m.teams},
		users:    memRecords[User, *User]{m, &m.users},
		endUsers: memRecords[EndUser, *EndUser]{m, &m.endUsers},
		orgs:     memRecords[Organization, *Organization]{m, &m.orgs},
		budgets:  memRecords[BudgetRecord, *BudgetRecord]{m, &m.budgets},
	}
}

// Teams implements Admin.
func (m *Memory) Teams() Records[Team] { return m.records.teams }

// Users implements Admin.
func (m *Memory) Users() Records[User] { return m.records.users }

// EndUsers implements Admin.
func (m *Memory) EndUsers() Records[EndUser] { return m.records.endUsers }

// Organizations implements Admin.
func (m *Memory) Organizations() Records[Organization] { return m.records.orgs }

// Budgets implements Admin.
func (m *Memory) Budgets() Records[BudgetRecord] { return m.records.budgets }
