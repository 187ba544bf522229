package keys

import (
	"context"
	"fmt"
	"time"
)

// SpendAfterSet is the spend state SetSpend leaves on a record with budget
// settings b: nanos spent in its lifetime and, with a Duration, in the
// period containing at. Both stores follow it.
func SpendAfterSet(b Budget, nanos int64, at time.Time) SpendState {
	st := SpendState{Total: nanos}
	if b.Duration != "" {
		st.PeriodStart, st.Period = b.PeriodAt(at), nanos
	}
	return st
}

func validSetSpend(r Ref, nanos int64) error {
	if nanos < 0 {
		return fmt.Errorf("set spend of %s to %d nano-USD: %w: negative", r, nanos, ErrInvalid)
	}
	return nil
}

// SetSpend implements Admin.
func (m *Memory) SetSpend(_ context.Context, r Ref, nanos int64, at time.Time) error {
	if err := validSetSpend(r, nanos); err != nil {
		return err
	}
	return m.write(nil, func() error {
		b, ok := m.budgetOf(r)
		if !ok {
			return notFound(string(r.Kind), r.ID)
		}
		st := SpendAfterSet(b, nanos, at)
		st.Models = m.spend[r].Models // per-model spend is not set (as in DynamoDB)
		m.spend[r] = st
		return nil
	})
}

// SetSpend implements Admin.
func (c *Cached) SetSpend(ctx context.Context, r Ref, nanos int64, at time.Time) error {
	defer c.drop(r)
	return c.store.SetSpend(ctx, r, nanos, at)
}
