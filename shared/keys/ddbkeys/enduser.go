package ddbkeys

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// An end user's item: pk "enduser#<id>", kind "enduser", its settings
// (settings.go) and alias (S), created_at and updated_at (N, epoch ms).
//
// endUsersPK is the item that counts the end user records ("n"), changed
// in the same transaction as each record's creation and deletion, so that
// the gateway can skip end-user lookups altogether while there are none.
// It has no kind: listings never see it.
const endUsersPK = "meta#endusers"

func endUserPK(id string) string { return refPK(keys.KindEndUser, id) }

// endUserAttrs encodes the settings of e (created_at aside).
func endUserAttrs(e keys.EndUser) attrs {
	a := settingsAttrs(e.Settings)
	a.set[attrAlias] = ddb.S(e.Alias)
	a.time(attrUpdated, e.UpdatedAt)
	return a
}

func decodeEndUser(id string, item ddb.Item) keys.EndUser {
	return keys.EndUser{
		ID: id, Alias: ddb.String(item, attrAlias), CreatedAt: getTime(item, attrCreated), UpdatedAt: getTime(item, attrUpdated),
		Settings: decodeSettings(item),
	}
}

func (st *Store) endUserCount(delta int64) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(st.table),
		Key:                       ddb.PK(endUsersPK),
		UpdateExpression:          aws.String("ADD #n :d"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": ddb.N(delta)},
	}}
}

// HasEndUsers implements keys.Reader: one strongly consistent read of the
// count.
func (st *Store) HasEndUsers(ctx context.Context) (bool, error) {
	ctx, cancel := st.call(ctx)
	defer cancel()
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.table), Key: ddb.PK(endUsersPK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, wrap("count", "end users", err)
	}
	return ddb.Int0(out.Item, "n") > 0, nil
}

// GetEndUser implements keys.Reader.
func (st *Store) GetEndUser(ctx context.Context, id string) (keys.EndUser, error) {
	return read(ctx, st, keys.Ref{Kind: keys.KindEndUser, ID: id}, keys.ValidID("end user id", id) == nil, decodeEndUser)
}

// CreateEndUser implements keys.Admin: the item and the count, in one
// transaction.
func (st *Store) CreateEndUser(ctx context.Context, e keys.EndUser) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now()
	}
	what := "end user " + e.ID
	err := st.transact(ctx, what, []types.TransactWriteItem{
		put(st.table, newItem(endUserAttrs(e), endUserPK(e.ID), keys.KindEndUser, e.CreatedAt), "attribute_not_exists(pk)", nil),
		st.endUserCount(1),
	})
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: %w", what, keys.ErrExists)
	}
	return err
}

// UpdateEndUser implements keys.Admin.
func (st *Store) UpdateEndUser(ctx context.Context, e keys.EndUser) (keys.EndUser, error) {
	return write(ctx, st, e, keys.Ref{Kind: keys.KindEndUser, ID: e.ID}, endUserAttrs(e), decodeEndUser)
}

// ListEndUsers implements keys.Admin.
func (st *Store) ListEndUsers(ctx context.Context) ([]keys.EndUser, error) {
	return list(ctx, st, keys.KindEndUser, decodeEndUser)
}

// deleteEndUser deletes the item and counts it out, in one transaction.
func (st *Store) deleteEndUser(ctx context.Context, id string) error {
	what := "end user " + id
	err := st.transact(ctx, what, []types.TransactWriteItem{
		del(st.table, endUserPK(id), "attribute_exists(pk)", nil),
		st.endUserCount(-1),
	})
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: %w", what, keys.ErrNotFound)
	}
	return err
}
