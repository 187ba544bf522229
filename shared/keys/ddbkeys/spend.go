package ddbkeys

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// SpendStates reads the budget settings and spend of the records refs name,
// with strongly consistent reads (BatchGetItem, 100 at a time), and the
// budgets they link, if any (one more BatchGetItem; their limits apply in
// place of the records' own, as keys.Linked applies them). Records that
// do not exist are absent from the result.
func (st *Store) SpendStates(ctx context.Context, refs []keys.Ref) (map[keys.Ref]keys.RecordSpend, error) {
	out := make(map[keys.Ref]keys.RecordSpend, len(refs))
	byPK := make(map[string]keys.Ref, len(refs))
	for _, r := range refs {
		byPK[r.String()] = r
	}
	items, err := st.batchGet(ctx, slices.Sorted(maps.Keys(byPK)))
	if err != nil {
		return nil, wrap("read spend of", fmt.Sprintf("%d records", len(refs)), err)
	}
	for _, item := range items {
		r, ok := byPK[ddb.String(item, attrPK)]
		if !ok || ddb.String(item, attrKind) == "" {
			continue
		}
		s := decodeSettings(item)
		out[r] = keys.RecordSpend{Budget: s.Budget, ModelMaxBudget: s.ModelMaxBudget, State: decodeSpendState(item), BudgetID: s.BudgetID}
	}
	if err := st.linkBudgets(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// backoff waits before retry attempt (1, 2, ...): full jitter over an
// exponential bound (10 ms doubling, at most 640 ms), so that writers that
// conflicted on the same records do not collide again in step.
func backoff(ctx context.Context, attempt int) error {
	bound := 10 * time.Millisecond << min(attempt, 6)
	d := time.Duration(rand.Int64N(int64(bound))) + time.Millisecond
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// SpendUpdate returns the transaction item that moves the record ref from
// what was read of it (from) to the spend state to: the lifetime spend and,
// in the same period, the period spend grow by ADD, so concurrent writers
// never lose an increment; a new period is SET. Its condition holds only
// while the record exists with the budget_duration and period_start that
// were read, so a concurrent period change or budget_duration change
// cancels the transaction (re-read and retry); a record linking a budget
// is conditioned on still linking it instead (a change of the linked
// budget's budget_duration between the read and the write is not seen:
// the spend counts in the period of the duration read). It leaves
// soft_alerted to MarkSoft.
func SpendUpdate(table string, ref keys.Ref, from keys.RecordSpend, to keys.SpendState) types.TransactWriteItem {
	names := map[string]string{"#spend": attrSpend, "#pk": attrPK, "#ps": attrPeriodStart, "#dur": attrDuration, "#bid": attrBudgetID}
	values := ddb.Item{":spend": money(to.Total - from.State.Total)}
	expr := "ADD #spend :spend"
	cond := "attribute_exists(#pk)"
	switch {
	case from.BudgetID != "":
		delete(names, "#dur")
		cond += " AND #bid = :bid"
		values[":bid"] = ddb.S(from.BudgetID)
	case from.Budget.Duration == "":
		cond += " AND attribute_not_exists(#dur) AND attribute_not_exists(#bid)"
	default:
		cond += " AND attribute_not_exists(#bid) AND #dur = :dur"
		values[":dur"] = ddb.S(from.Budget.Duration)
	}
	if from.State.PeriodStart.IsZero() {
		cond += " AND attribute_not_exists(#ps)"
	} else {
		cond += " AND #ps = :old"
		values[":old"] = ddb.N(from.State.PeriodStart.UnixMilli())
	}
	names["#pspend"] = attrPeriodSpend
	switch {
	case to.PeriodStart.Equal(from.State.PeriodStart):
		if d := to.Period - from.State.Period; d != 0 {
			expr += ", #pspend :pd"
			values[":pd"] = money(d)
		} else {
			delete(names, "#pspend")
		}
	default:
		expr += " SET #ps = :ps, #pspend = :pspend"
		values[":ps"] = ddb.N(to.PeriodStart.UnixMilli())
		values[":pspend"] = money(to.Period)
	}
	if sets, c := modelSpendUpdate(from.State.Models, to.Models, names, values); sets != "" {
		if strings.Contains(expr, " SET ") {
			expr += ", " + sets
		} else {
			expr += " SET " + sets
		}
		cond += c
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(table),
		Key:                       ddb.PK(ref.String()),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

// MarkSoft marks the record's soft budget crossing for the period starting
// at mark, unless it is marked already; it reports whether this call marked
// it, so that exactly one caller logs the crossing.
func (st *Store) MarkSoft(ctx context.Context, ref keys.Ref, mark time.Time) (bool, error) {
	_, err := st.runUpdate(ctx, &types.Update{
		TableName:                 aws.String(st.table),
		Key:                       ddb.PK(ref.String()),
		UpdateExpression:          aws.String("SET #sa = :m"),
		ConditionExpression:       aws.String("attribute_exists(#pk) AND (attribute_not_exists(#sa) OR #sa <> :m)"),
		ExpressionAttributeNames:  map[string]string{"#sa": attrSoftAlerted, "#pk": attrPK},
		ExpressionAttributeValues: ddb.Item{":m": ddb.N(mark.UnixMilli())},
	}, types.ReturnValueNone)
	if ddb.ConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, wrap("mark soft budget of", ref.String(), err)
	}
	return true, nil
}

// ApplySpend implements keys.Spender: it reads the records, computes each
// one's next state with keys.Step, and writes them all in one
// TransactWriteItems (at most 100 records), retrying on a concurrent period
// change. Soft budget crossings are then marked one by one.
func (st *Store) ApplySpend(ctx context.Context, deltas []keys.SpendDelta) ([]keys.Ref, error) {
	var refs []keys.Ref
	seen := map[keys.Ref]bool{}
	for _, d := range deltas {
		if d.Nanos < 0 || d.Ref.ID == "" {
			return nil, fmt.Errorf("spend for %s: %w", d.Ref, keys.ErrInvalid)
		}
		if !seen[d.Ref] {
			seen[d.Ref] = true
			refs = append(refs, d.Ref)
		}
	}
	if len(refs) > 100 {
		return nil, fmt.Errorf("spend for %d records: %w: at most 100 in one call", len(refs), keys.ErrInvalid)
	}
	for attempt := 0; ; attempt++ {
		states, err := st.SpendStates(ctx, refs)
		if err != nil {
			return nil, err
		}
		moved, err := st.FollowMoves(ctx, refs, states)
		if err != nil {
			return nil, err
		}
		ds, targets := keys.Redirect(deltas, moved)
		next, crossed := NextStates(states, ds)
		creates := EndUserCreates(st.table, states, ds)
		if len(next) == 0 && len(creates) == 0 {
			return nil, nil
		}
		items := make([]types.TransactWriteItem, 0, len(next)+len(creates))
		for _, r := range targets {
			if to, ok := next[r]; ok {
				items = append(items, SpendUpdate(st.table, r, states[r], to))
			}
		}
		items = append(items, creates...)
		err = st.transactItems(ctx, items)
		var canceled *types.TransactionCanceledException
		if errors.As(err, &canceled) && attempt < 30 {
			if err := backoff(ctx, attempt+1); err != nil {
				return nil, wrap("add spend to", fmt.Sprintf("%d records", len(next)), err)
			}
			continue
		}
		if err != nil {
			return nil, wrap("add spend to", fmt.Sprintf("%d records", len(next)), err)
		}
		var marked []keys.Ref
		for _, c := range crossed {
			ok, err := st.MarkSoft(ctx, c.Ref, c.Mark)
			if err != nil {
				return marked, err
			}
			if ok {
				marked = append(marked, c.Ref)
			}
		}
		return marked, nil
	}
}

// Crossing is a soft budget a batch of spend crossed, in the period marked
// by Mark.
type Crossing struct {
	Ref  keys.Ref
	Mark time.Time
}

// NextStates applies deltas in order, with keys.Step, to the records read in
// states; deltas for records not in states are skipped. It returns each
// touched record's next state and the soft budget crossings to mark.
func NextStates(states map[keys.Ref]keys.RecordSpend, deltas []keys.SpendDelta) (map[keys.Ref]keys.SpendState, []Crossing) {
	next := map[keys.Ref]keys.SpendState{}
	var crossed []Crossing
	for _, d := range deltas {
		rs, ok := states[d.Ref]
		if !ok {
			continue
		}
		cur, ok := next[d.Ref]
		if !ok {
			cur = rs.State
		}
		to, c := keys.Step(rs.Budget, cur, d)
		if d.Model != "" {
			to.Models = keys.StepModels(rs.ModelMaxBudget, to.Models, d)
		}
		next[d.Ref] = to
		if c {
			crossed = append(crossed, Crossing{Ref: d.Ref, Mark: to.SoftAlerted})
		}
	}
	return next, crossed
}
