package ddbkeys

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// endUsersPK is the item that counts the end user records ("n"), changed
// in the same transaction as each record's creation and deletion, so that
// the gateway can skip end-user lookups altogether while there are none.
// It has no kind: listings never see it.
const endUsersPK = "meta#endusers"

func (st *Store) endUserCount(delta int64) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(st.table),
		Key:                       itemKey(endUsersPK),
		UpdateExpression:          aws.String("ADD #n :d"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": n(delta)},
	}}
}

// HasEndUsers implements keys.AdminStore: one strongly consistent read of
// the count.
func (st *Store) HasEndUsers(ctx context.Context) (bool, error) {
	ctx, cancel := st.call(ctx)
	defer cancel()
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.table), Key: itemKey(endUsersPK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, wrap("count", "end users", err)
	}
	c, _ := getInt(out.Item, "n")
	return c > 0, nil
}
