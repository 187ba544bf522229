package keys

import (
	"context"
	"slices"
)

// GetBudget implements Reader.
func (m *Memory) GetBudget(_ context.Context, id string) (BudgetRecord, error) {
	return locked(m, func() (BudgetRecord, error) { return m.budgets.get(m, id, ValidID("budget_id", id)) })
}

// DeleteBudget implements Admin.
func (m *Memory) DeleteBudget(_ context.Context, id string) error {
	return m.write(nil, func() error {
		if _, ok := m.budgets.m[id]; !ok {
			return notFound("budget", id)
		}
		m.budgets.remove(m, id)
		return nil
	})
}

// BudgetLinks implements Admin.
func (m *Memory) BudgetLinks(_ context.Context, id string) ([]Ref, error) {
	return locked(m, func() ([]Ref, error) {
		var out []Ref
		out = appendLinks(out, &m.keys, id)
		out = appendLinks(out, &m.teams, id)
		out = appendLinks(out, &m.users, id)
		out = appendLinks(out, &m.endUsers, id)
		out = appendLinks(out, &m.orgs, id)
		for _, g := range Groups {
			out = appendLinks(out, m.members[g], id)
		}
		slices.SortFunc(out, func(a, b Ref) int { return cmpString(a.String(), b.String()) })
		return out, nil
	})
}

// appendLinks appends the records of t that link the budget id.
func appendLinks[T any, P record[T]](out []Ref, t *table[T, P], id string) []Ref {
	for _, v := range t.m {
		if P(&v).settings().BudgetID == id {
			out = append(out, P(&v).ref())
		}
	}
	return out
}

// linkedBudget returns the budget settings of s as its linked budget, if
// any, makes them. m.mu is held.
func (m *Memory) linkedBudget(s Settings) Budget {
	if s.BudgetID != "" {
		if b, ok := m.budgets.m[s.BudgetID]; ok {
			b.ApplyTo(&s)
		}
	}
	return s.Budget
}
