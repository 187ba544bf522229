package keys

import (
	"context"
	"fmt"
	"time"
)

// SpendState is a record's spend in exact nano-dollars: what ApplySpend
// changes. Both stores follow Step.
type SpendState struct {
	Total       int64     // lifetime
	PeriodStart time.Time // zero: no period yet
	Period      int64     // spent in the period starting at PeriodStart
	SoftAlerted time.Time // see Budget.SoftAlerted
	// Models is the spend on each model of the record's model_max_budget
	// (StepModels); nil: none. A changed map is a new one: never shared
	// maps are written.
	Models map[string]ModelSpend
}

// Step returns the state after adding d to a record with budget settings b
// in state st: the lifetime total always grows; a period later than
// st.PeriodStart starts over with d, the same period grows, an earlier one
// is not touched. crossed reports that the soft budget is now reached in a
// period whose crossing was not marked yet (the new state marks it).
func Step(b Budget, st SpendState, d SpendDelta) (next SpendState, crossed bool) {
	next = st
	next.Total += d.Nanos
	mark := time.Unix(0, 0).UTC()
	current := next.Total
	if b.Duration != "" {
		p := b.PeriodAt(d.At)
		switch {
		case p.After(st.PeriodStart):
			next.PeriodStart, next.Period = p, d.Nanos
		case p.Equal(st.PeriodStart):
			next.Period += d.Nanos
		default:
			return next, false // an earlier period's spend: lifetime only
		}
		mark, current = p, next.Period
	}
	if b.SoftBudget != nil && current >= Nanos(*b.SoftBudget) && !next.SoftAlerted.Equal(mark) {
		next.SoftAlerted = mark
		return next, true
	}
	return next, false
}

// budget returns st as the read fields of a Budget with settings b.
func (st SpendState) budget(b Budget) Budget {
	b.Spend, b.PeriodStart, b.PeriodSpend, b.SoftAlerted = USD(st.Total), st.PeriodStart, USD(st.Period), st.SoftAlerted
	return b
}

// modelBudgetsOf returns the model_max_budget of the record r names.
// m.mu is held.
func (m *Memory) modelBudgetsOf(r Ref) map[string]ModelBudget {
	s, _ := m.settingsOf(r)
	return s.ModelMaxBudget
}

// settingsOf returns the settings of the record r names, if it exists.
// m.mu is held.
func (m *Memory) settingsOf(r Ref) (Settings, bool) {
	if t, ok := m.byKind[r.Kind]; ok {
		return t.settingsOf(r.ID)
	}
	return Settings{}, false
}

func (b *Budget) clearSpend() {
	b.Spend, b.PeriodStart, b.PeriodSpend, b.SoftAlerted = 0, time.Time{}, 0, time.Time{}
}

// budgetOf returns the budget settings of the record r names, if it
// exists: those of the budget it links, if any (Linked). m.mu is held.
func (m *Memory) budgetOf(r Ref) (Budget, bool) {
	s, ok := m.settingsOf(r)
	return m.linkedBudget(s), ok
}

// follow returns the key a regenerated key's old hash became (moves.go),
// or r itself. m.mu is held.
func (m *Memory) follow(r Ref) Ref {
	if r.Kind != KindKey {
		return r
	}
	now := m.now()
	h := r.ID
	for hops := 0; ; hops++ {
		if _, ok := m.keys.m[h]; ok {
			return Ref{KindKey, h}
		}
		mv, ok := m.moved[h]
		if !ok || !mv.Live(now) || hops == MaxMoves {
			return r
		}
		h = mv.To
	}
}

// ApplySpend implements Spender.
func (m *Memory) ApplySpend(_ context.Context, deltas []SpendDelta) ([]Ref, error) {
	if err := validDeltas(deltas); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var crossed []Ref
	for _, d := range deltas {
		d.Ref = m.follow(d.Ref)
		b, ok := m.budgetOf(d.Ref)
		if !ok && TracksEndUser(d.Ref) {
			_ = m.endUsers.create(m, EndUser{ID: d.Ref.ID, CreatedAt: d.At}, nil)
			b, ok = Budget{}, true
		}
		if !ok {
			continue
		}
		next, c := Step(b, m.spend[d.Ref], d)
		if d.Model != "" {
			next.Models = StepModels(m.modelBudgetsOf(d.Ref), next.Models, d)
		}
		m.spend[d.Ref] = next
		if c {
			crossed = append(crossed, d.Ref)
		}
	}
	return crossed, nil
}

// TracksEndUser reports whether spend for r creates its record when it
// does not exist: an end user (a request's "user") with an id a record
// can have, as LiteLLM's spend update upserts its end user table, so that
// /customer/info and /customer/list know every end user that spent.
func TracksEndUser(r Ref) bool {
	return r.Kind == KindEndUser && ValidID("user_id", r.ID) == nil
}

func validDeltas(deltas []SpendDelta) error {
	for _, d := range deltas {
		if d.Nanos < 0 {
			return fmt.Errorf("spend %d nano-USD for %s: %w: negative", d.Nanos, d.Ref, ErrInvalid)
		}
		if d.Ref.ID == "" {
			return fmt.Errorf("spend for a %s with no id: %w", d.Ref.Kind, ErrInvalid)
		}
	}
	return nil
}

// RecordSpend is what the spend pipeline reads of a record before adding to
// it: its budget settings and its spend state.
type RecordSpend struct {
	// Budget is the budget settings that apply (MaxBudget, SoftBudget,
	// Duration: the linked budget's when the record links one), with
	// the spend fields as read.
	Budget         Budget
	ModelMaxBudget map[string]ModelBudget
	State          SpendState
	// BudgetID is the budget the record links ("": none): its update is
	// conditioned on still linking it rather than on its own
	// budget_duration.
	BudgetID string
}
