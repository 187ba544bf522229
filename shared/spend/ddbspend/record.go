package ddbspend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// aggregate is what the events of a chunk add to records and rows.
type aggregate struct {
	refs   []keys.Ref
	deltas []keys.SpendDelta
	rows   spend.Rows
}

func aggregateOf(evs []*spend.Event) *aggregate {
	a := &aggregate{}
	seen := map[keys.Ref]bool{}
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(x, y *spend.Event) int { return x.End.Compare(y.End) })
	for _, e := range sorted {
		for _, d := range e.Deltas() {
			a.deltas = append(a.deltas, d)
			if !seen[d.Ref] {
				seen[d.Ref] = true
				a.refs = append(a.refs, d.Ref)
			}
		}
		a.rows.Add(e)
	}
	return a
}

// chunks splits evs into transactions of at most max items each: an
// event's log, and the records, rows and hold items it adds to the chunk.
func chunks(evs []*spend.Event, max int) [][]*spend.Event {
	var out [][]*spend.Event
	var cur []*spend.Event
	refs := map[keys.Ref]bool{}
	var rows spend.Rows
	var hc holdCount
	for _, e := range evs {
		var er []keys.Ref
		if e.Nanos() > 0 {
			er = e.Refs()
		}
		added := 1 + hc.add(e, false)
		for _, r := range er {
			if !refs[r] {
				added++
			}
		}
		newRow, newEU := rows.New(e)
		for _, n := range []bool{newRow, newEU} {
			if n {
				added++
			}
		}
		// one item kept for the count of end users a chunk may create (ddbkeys.EndUserCreates)
		if len(cur) > 0 && len(cur)+len(refs)+len(rows.Daily)+len(rows.EndUsers)+hc.items()+added+1 > max {
			out = append(out, cur)
			cur = nil
			clear(refs)
			rows = spend.Rows{}
			hc.reset()
		}
		cur = append(cur, e)
		hc.add(e, true)
		for _, r := range er {
			refs[r] = true
		}
		rows.Add(e)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// Record implements spend.Store.
func (st *Store) Record(ctx context.Context, evs []spend.Event) (spend.Result, error) {
	var res spend.Result
	seen := make(map[string]bool, len(evs))
	list := make([]*spend.Event, 0, len(evs))
	for i := range evs {
		e := &evs[i]
		if err := e.Validate(); err != nil {
			return spend.Result{}, err
		}
		if seen[e.RequestID] {
			res.Duplicates++
			continue
		}
		seen[e.RequestID] = true
		list = append(list, e)
	}
	for _, c := range chunks(list, st.o.MaxItems) {
		if err := st.recordChunk(ctx, c, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// recordChunk commits one self-contained transaction, dropping the events
// recorded before.
func (st *Store) recordChunk(ctx context.Context, evs []*spend.Event, res *spend.Result) error {
	swept := map[string]bool{} // holds found released by the sweeper
	for attempt := 0; len(evs) > 0; attempt++ {
		nSwept := len(swept)
		if attempt >= 30 {
			return fmt.Errorf("record %d spend events: %w: gave up after %d attempts", len(evs), spend.ErrUnavailable, attempt)
		}
		a := aggregateOf(evs)
		states, moved, err := st.readRecords(ctx, a.refs)
		if err != nil {
			return err
		}
		// Spend for a regenerated key's old hash goes to the key it became;
		// its write is conditioned on that key as read, like any other.
		deltas, targets := keys.Redirect(a.deltas, moved)
		next, crossed := ddbkeys.NextStates(states, deltas)
		items := make([]types.TransactWriteItem, 0, len(evs)+len(next)+len(a.rows.Daily)+len(a.rows.EndUsers))
		for _, e := range evs {
			items = append(items, types.TransactWriteItem{Put: &types.Put{
				TableName:                aws.String(st.table),
				Item:                     st.logItem(e),
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": aPK},
			}})
		}
		nLogs := len(items)
		for _, r := range targets {
			if to, ok := next[r]; ok {
				items = append(items, ddbkeys.SpendUpdate(st.keysTable, r, states[r], to))
			}
		}
		items = append(items, ddbkeys.EndUserCreates(st.keysTable, states, deltas)...) // a new end user: created with its spend
		nRefs := len(items) - nLogs
		for _, r := range a.rows.Daily {
			items = append(items, st.rowUpdate(r))
		}
		for _, r := range a.rows.EndUsers {
			items = append(items, st.endUserUpdate(r))
		}
		nHold0 := len(items)
		var held []*spend.Event
		if st.o.CountersTable != "" {
			var hi []types.TransactWriteItem
			hi, held = st.holdItems(evs, swept)
			items = append(items, hi...)
		}
		cctx, cancel := context.WithTimeout(ctx, st.o.Timeout)
		out, err := st.client.TransactWriteItems(cctx, &dynamodb.TransactWriteItemsInput{
			TransactItems:          items,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		cancel()
		if err == nil {
			st.transactions.Add(1)
			st.transactItems.Add(int64(len(items)))
			for _, cc := range out.ConsumedCapacity {
				st.writeMilli.Add(int64(aws.ToFloat64(cc.CapacityUnits) * 1000))
			}
			est := int64(2 * (len(items) - nLogs))
			for _, it := range items[:nLogs] {
				est += 2 * int64((ItemSize(it.Put.Item)+1023)/1024)
			}
			st.estimated.Add(est)
			res.Recorded += len(evs)
			st.markSoft(ctx, crossed, res)
			return nil
		}
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) {
			if ddb.Unavailable(err) && ctx.Err() == nil {
				if berr := backoff(ctx, attempt); berr != nil {
					return fmt.Errorf("record spend: %w: %w", spend.ErrUnavailable, err)
				}
				continue
			}
			return fmt.Errorf("record spend: %w: %w", spend.ErrUnavailable, err)
		}
		st.cancellations.Add(1)
		dup := map[int]bool{}
		other := false
		for i, r := range canceled.CancellationReasons {
			code := aws.ToString(r.Code)
			switch {
			case code == "" || code == "None":
			case code == "ConditionalCheckFailed" && i < nLogs:
				dup[i] = true
			case code == "ConditionalCheckFailed" && i < nLogs+nRefs:
				other = true // a record's period or duration changed: re-read
			case code == "ConditionalCheckFailed" && i >= nHold0 && i-nHold0 < len(held):
				swept[held[i-nHold0].RequestID] = true // its hold was released: settle without it
			default:
				other = true // TransactionConflict, throttling: retry
			}
		}
		if len(canceled.CancellationReasons) == 0 { // no reasons given: ask which logs exist
			existing, err := st.existingLogs(ctx, evs)
			if err != nil {
				return err
			}
			for i, e := range evs {
				if existing[e.RequestID] {
					dup[i] = true
				}
			}
		}
		if len(dup) > 0 {
			kept := evs[:0:0]
			for i, e := range evs {
				if !dup[i] {
					kept = append(kept, e)
				}
			}
			res.Duplicates += len(evs) - len(kept)
			evs = kept
			continue // re-aggregate without them, at once
		}
		if len(swept) > nSwept {
			continue // settle the released holds with their real cost, at once
		}
		_ = other
		if err := backoff(ctx, attempt); err != nil {
			return fmt.Errorf("record spend: %w: %w", spend.ErrUnavailable, err)
		}
	}
	return nil
}

// readRecords reads the spend of the records refs name, following the
// forwarding of regenerated keys (Records.FollowMoves).
func (st *Store) readRecords(ctx context.Context, refs []keys.Ref) (map[keys.Ref]keys.RecordSpend, map[keys.Ref]keys.Ref, error) {
	if len(refs) == 0 {
		return nil, nil, nil
	}
	states, err := st.records.SpendStates(ctx, refs)
	if err != nil {
		return nil, nil, fmt.Errorf("record spend: %w: %w", spend.ErrUnavailable, err)
	}
	moved, err := st.records.FollowMoves(ctx, refs, states)
	if err != nil {
		return nil, nil, fmt.Errorf("record spend: %w: %w", spend.ErrUnavailable, err)
	}
	return states, moved, nil
}

func (st *Store) markSoft(ctx context.Context, crossed []ddbkeys.Crossing, res *spend.Result) {
	for _, c := range crossed {
		ok, err := st.records.MarkSoft(ctx, c.Ref, c.Mark)
		if err != nil {
			st.o.Logger.LogAttrs(ctx, slog.LevelWarn, "soft budget crossing not marked",
				slog.String("record", c.Ref.String()), slog.String("error", err.Error()))
			continue
		}
		if ok {
			res.SoftCrossed = append(res.SoftCrossed, c.Ref)
		}
	}
}

// existingLogs reports which of evs' logs exist.
func (st *Store) existingLogs(ctx context.Context, evs []*spend.Event) (map[string]bool, error) {
	ks := make([]ddb.Item, len(evs))
	for i, e := range evs {
		ks[i] = logKey(e.Day(), e.RequestID)
	}
	items, err := st.batchGet(ctx, ks, aSK)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, it := range items {
		out[ddb.String(it, aSK)] = true
	}
	return out, nil
}
