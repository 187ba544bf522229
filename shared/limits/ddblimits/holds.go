package ddblimits

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
	names := make([]types.AttributeValue, len(h.Budgets))
	for i, b := range h.Budgets {
		name := b.Counter()
		names[i] = &types.AttributeValueMemberS{Value: name}
		values := map[string]types.AttributeValue{
			":base": num(b.Base), ":r": num(h.Amount), ":lim": num(b.Max - h.Amount),
		}
		expr := "SET c = if_not_exists(c, :base) + :r"
		if !b.End.IsZero() {
			expr += ", expires_at = :exp"
			values[":exp"] = num(b.End.Add(BudgetTTL).Unix())
		}
		out = append(out, types.TransactWriteItem{Update: &types.Update{
			TableName:                           aws.String(counters),
			Key:                                 key(name),
			UpdateExpression:                    aws.String(expr),
			ConditionExpression:                 aws.String("attribute_not_exists(c) OR c <= :lim"),
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	}
	pk, sk := limits.HoldKey(h.ID, h.Expires)
	out = append(out, types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(holds),
		Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk},
			"amt": num(h.Amount), "cs": &types.AttributeValueMemberL{Value: names},
		},
	}})
	return out
}

// Committed returns a budget counter's value and whether it exists (a
// strongly consistent read; for tests and tools).
func (s *Store) Committed(ctx context.Context, counter string) (int64, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(counter), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, false, fmt.Errorf("read budget counter: %w", err)
	}
	_, ok := out.Item["c"]
	return getInt(out.Item, "c"), ok, nil
}
