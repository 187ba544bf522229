package ddblimits

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/limits"
)

// Strict-budget items (see limits.Hold):
//
//	counters table  pk "bud#<kind>#<id>#<period start, unix s>"   c (N, nano-USD), expires_at (a day after the period ends)
//	spend table     pk "hold#<shard>"  sk "<expiry, unix ms>#<request id>"   amt (N, nano-USD), cs (L of counter names)
//
// The admission adds the hold's amount to each counter with
//
//	SET c = if_not_exists(c, :base) + :r   IF attribute_not_exists(c) OR c <= :max - :r
//
// (the caller checked :base + :r <= :max) and puts the hold, in the same
// TransactWriteItems as the rate-limit counters: no extra round trip.

// BudgetTTL is how long after its period ends a budget counter may be
// deleted by TTL: long after the last hold of the period is settled.
const BudgetTTL = 24 * time.Hour

// holdItems are the counter updates and the hold put of h.
func holdItems(counters, holds string, h *limits.Hold) []types.TransactWriteItem {
	out := make([]types.TransactWriteItem, 0, len(h.Budgets)+1)
	names := h.Counters()
	for i, b := range h.Budgets {
		name := names[i]
		values := ddb.Item{
			":base": ddb.N(b.Base), ":r": ddb.N(h.Amount), ":lim": ddb.N(b.Max - h.Amount),
		}
		expr := "SET c = if_not_exists(c, :base) + :r"
		if !b.End.IsZero() {
			expr += ", expires_at = :exp"
			values[":exp"] = ddb.N(b.End.Add(BudgetTTL).Unix())
		}
		out = append(out, types.TransactWriteItem{Update: &types.Update{
			TableName:                           aws.String(counters),
			Key:                                 ddb.PK(name),
			UpdateExpression:                    aws.String(expr),
			ConditionExpression:                 aws.String("attribute_not_exists(c) OR c <= :lim"),
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	}
	out = append(out, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(holds), Item: HoldItem(h)}})
	return out
}

// HoldItem is h's item in the spend table.
func HoldItem(h *limits.Hold) ddb.Item {
	pk, sk := limits.HoldKey(h.ID, h.Expires)
	return ddb.Item{"pk": ddb.S(pk), "sk": ddb.S(sk), "amt": ddb.N(h.Amount), "cs": ddb.List(h.Counters())}
}

// ReadHoldItem reads what the sweeper gives back from a hold's item: its
// amount and its counters.
func ReadHoldItem(it ddb.Item) (amount int64, counters []string) {
	return ddb.Int0(it, "amt"), ddb.Strings(it, "cs")
}

// BudgetAdd adds delta to a budget counter, unconditionally: a hold
// settled (real cost - reserved) or released (-reserved), in the
// transaction that deletes the hold.
func BudgetAdd(counters, counter string, delta int64) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(counters),
		Key:                       ddb.PK(counter),
		UpdateExpression:          aws.String("ADD c :d"),
		ExpressionAttributeValues: ddb.Item{":d": ddb.N(delta)},
	}}
}

// Committed returns a budget counter's value and whether it exists (a
// strongly consistent read; for tests and tools).
func (s *Store) Committed(ctx context.Context, counter string) (int64, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: ddb.PK(counter), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, false, fmt.Errorf("read budget counter: %w", err)
	}
	_, ok := out.Item["c"]
	return ddb.Int0(out.Item, "c"), ok, nil
}
