package keys

import (
	"fmt"
	"maps"
	"slices"
)

// table is the Memory store's records of one kind, by id. Its methods are
// called with Memory.mu held; records go in and out as deep copies, their
// times at millisecond UTC (as DynamoDB stores them) and their spend
// fields filled from Memory.spend.
type table[T any, P record[T]] struct {
	what string // "key", "team", ... in errors
	m    map[string]T
	// prepare completes a new record before Create stores it, and keep
	// copies to an updated one what Update does not change, with
	// Memory.mu held (nil: nothing); memory_records.go sets them.
	prepare func(v *T) error
	keep    func(old T, v *T) error
}

func newTable[T any, P record[T]](what string) table[T, P] {
	return table[T, P]{what: what, m: map[string]T{}}
}

func notFound(what, id string) error { return fmt.Errorf("%s %s: %w", what, short(id), ErrNotFound) }

// out is v as a caller gets it: a copy with its spend filled in.
func (t *table[T, P]) out(m *Memory, v T) T {
	s := P(&v).settings()
	st := m.spend[P(&v).ref()]
	s.Budget, s.ModelSpend = st.budget(s.Budget), st.Models
	return clone[T, P](v)
}

// get returns the record id; invalid is the check of its id, as a read
// (nil: none): an id no record can have is ErrNotFound, as in ddbkeys.
func (t *table[T, P]) get(m *Memory, id string, invalid ...error) (T, error) {
	v, ok := t.m[id]
	if !ok || firstErr(invalid...) != nil {
		var zero T
		return zero, notFound(t.what, id)
	}
	return t.out(m, v), nil
}

// put stores v as a new or replaced record, without spend (spend lives in
// Memory.spend).
func (t *table[T, P]) put(v T) {
	normalize[T, P](&v)
	P(&v).settings().Budget.clearSpend()
	P(&v).settings().ModelSpend = nil
	t.m[P(&v).ref().ID] = clone[T, P](v)
}

// create stores v unless its id is taken; prepare completes it first
// (v.CreatedAt is set to now when zero).
func (t *table[T, P]) create(m *Memory, v T, prepare func(*T) error) error {
	id := P(&v).ref().ID
	if _, ok := t.m[id]; ok {
		return fmt.Errorf("%s %s: %w", t.what, short(id), ErrExists)
	}
	if created := P(&v).stamps()[0]; created.IsZero() {
		*created = m.now()
	}
	if prepare != nil {
		if err := prepare(&v); err != nil {
			return err
		}
	}
	t.put(v)
	return nil
}

// update replaces the settings of the stored record v names; keep copies
// from old what an update does not change (CreatedAt is always kept).
func (t *table[T, P]) update(m *Memory, v T, keep func(old T, v *T) error) (T, error) {
	id := P(&v).ref().ID
	old, ok := t.m[id]
	if !ok {
		var zero T
		return zero, notFound(t.what, id)
	}
	*P(&v).stamps()[0] = *P(&old).stamps()[0]
	if keep != nil {
		if err := keep(old, &v); err != nil {
			var zero T
			return zero, err
		}
	}
	t.put(v)
	return t.out(m, t.m[id]), nil
}

// remove deletes the record id and its spend.
func (t *table[T, P]) remove(m *Memory, id string) {
	v, ok := t.m[id]
	if !ok {
		return
	}
	delete(m.spend, P(&v).ref())
	delete(t.m, id)
}

func (t *table[T, P]) setBlocked(id string, blocked bool) error {
	v, ok := t.m[id]
	if !ok {
		return notFound(t.what, id)
	}
	P(&v).settings().Blocked = blocked
	t.m[id] = v
	return nil
}

// list returns the records match selects (nil: all), by id.
func (t *table[T, P]) list(m *Memory, match func(T) bool) []T {
	out := make([]T, 0, len(t.m))
	for _, id := range slices.Sorted(maps.Keys(t.m)) {
		if v := t.m[id]; match == nil || match(v) {
			out = append(out, t.out(m, v))
		}
	}
	return out
}

// settingsOf returns the settings of the record id, if it exists.
func (t *table[T, P]) settingsOf(id string) (Settings, bool) {
	v, ok := t.m[id]
	return *P(&v).settings(), ok
}

// change applies f to the stored record id, if it exists.
func (t *table[T, P]) change(id string, f func(*T)) {
	if v, ok := t.m[id]; ok {
		P(&v).own()
		f(&v)
		t.m[id] = v
	}
}
