package ddbspend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/shared/spend"
)

// Strict-budget holds (limits.Hold, items described in package ddblimits):
// a recorded event that carries a hold settles it in the event's own
// transaction: the hold's item is deleted (condition attribute_exists) and
// each of its counters in the counters table gets ADD c (real cost -
// reserved), aggregated per counter over the chunk. A cancellation on a
// hold's delete means the hold is not there: the sweeper released it, or
// it was never written (the event of an admission that got no answer names
// the hold it tried, whose write may or may not have been applied); the
// event is retried with ADD c (real cost: 0 for a request that failed its
// admission, so nothing) and no delete. The sweeper (SweepHolds) deletes an
// expired hold (condition attribute_exists) and ADDs -reserved to its
// counters in one transaction, so exactly one of the two gives the
// reservation back.

var _ limits.HoldSweeper = (*Store)(nil)

// holdCount tracks the hold items of a chunk being built (for chunks).
type holdCount struct {
	holds    int
	counters map[string]bool
}

// add returns how many items e's hold adds to the chunk, and counts them
// when commit is set.
func (hc *holdCount) add(e *spend.Event, commit bool) int {
	if e.Hold == nil {
		return 0
	}
	if hc.counters == nil {
		hc.counters = map[string]bool{}
	}
	n := 1
	for _, b := range e.Hold.Budgets {
		if c := b.Counter(); !hc.counters[c] {
			n++
			if commit {
				hc.counters[c] = true
			}
		}
	}
	if commit {
		hc.holds++
	}
	return n
}

func (hc *holdCount) items() int { return hc.holds + len(hc.counters) }

func (hc *holdCount) reset() { hc.holds = 0; clear(hc.counters) }

// holdItems returns the settlement items of evs' holds: a delete per hold
// not yet released (swept says which were), then one ADD per counter;
// held lists the events of the deletes, in order.
func (st *Store) holdItems(evs []*spend.Event, swept map[string]bool) (items []types.TransactWriteItem, held []*spend.Event) {
	sums := map[string]int64{}
	var order []string
	for _, e := range evs {
		h := e.Hold
		if h == nil {
			continue
		}
		released := swept[e.RequestID]
		delta := h.SettleDelta(e.Nanos(), released)
		if !released {
			items = append(items, st.holdDelete(limits.HoldKey(e.RequestID, h.Expires)))
			held = append(held, e)
		}
		for _, c := range h.Counters() {
			if _, ok := sums[c]; !ok {
				order = append(order, c)
			}
			sums[c] += delta
		}
	}
	for _, c := range order {
		if sums[c] != 0 {
			items = append(items, ddblimits.BudgetAdd(st.o.CountersTable, c, sums[c]))
		}
	}
	return items, held
}

// holdDelete deletes a hold's item if it is still there (else the whole
// transaction is cancelled: the sweeper or the consumer had it first).
func (st *Store) holdDelete(pk, sk string) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName:                aws.String(st.table),
		Key:                      ddb.PKSK(pk, sk),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": aPK},
	}}
}

// SweepHolds implements limits.HoldSweeper: it releases every hold that
// expired before now (its request never sent its spend event: a crash),
// each in one transaction with its counters, exactly once against the
// consumer's settlement. Run it about once a minute (the spend function's
// schedule; a ticker in local mode).
func (st *Store) SweepHolds(ctx context.Context, now time.Time) (int, error) {
	if st.o.CountersTable == "" {
		return 0, nil
	}
	released := 0
	var errs []error
	for shard := range limits.HoldShards {
		items, err := st.query(ctx, limits.HoldPartition(shard), "", nil, limits.HoldSortKey(now))
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep holds: %w", err))
		}
		for _, it := range items {
			ok, err := st.release(ctx, it)
			if err != nil {
				errs = append(errs, err)
			} else if ok {
				released++
			}
		}
	}
	return released, errors.Join(errs...)
}

// release deletes one expired hold and gives its amount back, unless the
// consumer settled it meanwhile (false).
func (st *Store) release(ctx context.Context, it ddb.Item) (bool, error) {
	amount, counters := ddblimits.ReadHoldItem(it)
	items := []types.TransactWriteItem{st.holdDelete(ddb.String(it, aPK), ddb.String(it, aSK))}
	if amount != 0 {
		for _, c := range counters {
			items = append(items, ddblimits.BudgetAdd(st.o.CountersTable, c, -amount))
		}
	}
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, st.o.Timeout)
		_, err := st.client.TransactWriteItems(cctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		cancel()
		if err == nil {
			return true, nil
		}
		var tce *types.TransactionCanceledException
		if errors.As(err, &tce) {
			conflict := false
			for i, r := range tce.CancellationReasons {
				switch aws.ToString(r.Code) {
				case "ConditionalCheckFailed":
					if i == 0 {
						return false, nil // settled by the consumer meanwhile
					}
				case "TransactionConflict":
					conflict = true
				}
			}
			if conflict && attempt < 20 {
				if berr := backoff(ctx, attempt); berr != nil {
					return false, berr
				}
				continue
			}
		}
		return false, fmt.Errorf("release hold %s: %w: %w", ddb.String(it, aSK), spend.ErrUnavailable, err)
	}
}

// OpenHolds returns the number of holds not yet settled or released (tests).
func (st *Store) OpenHolds(ctx context.Context) (int, error) {
	total := 0
	for shard := range limits.HoldShards {
		items, err := st.query(ctx, limits.HoldPartition(shard), "", nil, "")
		if err != nil {
			return 0, err
		}
		total += len(items)
	}
	return total, nil
}
