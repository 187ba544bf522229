package keys

import "context"

// SpendStates returns the budget settings (those of a linked budget, if
// any) and spend of the records refs name, as ddbkeys.Store.SpendStates
// does; records that do not exist are absent. The budget alerts read it.
func (m *Memory) SpendStates(_ context.Context, refs []Ref) (map[Ref]RecordSpend, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[Ref]RecordSpend, len(refs))
	for _, r := range refs {
		b, ok := m.budgetOf(r)
		if !ok {
			continue
		}
		s, _ := m.settingsOf(r)
		out[r] = RecordSpend{Budget: b, ModelMaxBudget: s.ModelMaxBudget, State: m.spend[r], BudgetID: s.BudgetID}
	}
	return out, nil
}
