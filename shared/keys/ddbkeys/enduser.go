package ddbkeys

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// An end user's item: pk "enduser#<id>", kind "enduser", its settings
// (settings.go) and alias (S), allowed_model_region (S; absent: any),
// created_at and updated_at (N, epoch ms).
//
// endUsersPK is the item that counts the end user records ("n"), changed
// in the same transaction as each record's creation and deletion, so that
// the gateway can skip end-user lookups altogether while there are none.
// It has no kind: listings never see it.
const endUsersPK = "meta#endusers"

func endUserPK(id string) string { return refPK(keys.KindEndUser, id) }

// endUserAttrs encodes the settings of e (created_at aside).
func endUserAttrs(e keys.EndUser) attrs {
	a := aliasedAttrs(e.Settings, e.Alias, e.UpdatedAt)
	a.opt(attrRegion, ddb.S(e.AllowedModelRegion), e.AllowedModelRegion != "")
	return a
}

const attrRegion = "allowed_model_region"

func decodeEndUser(id string, item ddb.Item) keys.EndUser {
	return keys.EndUser{
		ID: id, Alias: ddb.String(item, attrAlias), CreatedAt: getTime(item, attrCreated), UpdatedAt: getTime(item, attrUpdated),
		AllowedModelRegion: ddb.String(item, attrRegion), Settings: decodeSettings(item),
	}
}

// HasEndUsers implements keys.Reader: one strongly consistent read of the
// count.
func (st *Store) HasEndUsers(ctx context.Context) (bool, error) {
	n, err := st.count(ctx, endUsersPK, "end users")
	return n > 0, err
}

// GetEndUser implements keys.Reader.
func (st *Store) GetEndUser(ctx context.Context, id string) (keys.EndUser, error) {
	return read(ctx, st, keys.Ref{Kind: keys.KindEndUser, ID: id}, keys.ValidID("user_id", id) == nil, decodeEndUser)
}

// createEndUser is EndUsers().Create: the item and the count, in one
// transaction.
func (st *Store) createEndUser(ctx context.Context, e keys.EndUser) error {
	if err := prepared(e, &e.CreatedAt); err != nil {
		return err
	}
	return st.createCounted(ctx, newItem(endUserAttrs(e), endUserPK(e.ID), keys.KindEndUser, e.CreatedAt), endUsersPK, "end user "+e.ID)
}

// deleteEndUser deletes the item and counts it out, in one transaction.
func (st *Store) deleteEndUser(ctx context.Context, id string) error {
	return st.deleteCounted(ctx, endUserPK(id), endUsersPK, "end user "+id)
}

// EndUserCreates returns the transaction items that create the end users
// deltas spend for and states (as read) lacks (keys.TracksEndUser), each
// with its spend, as LiteLLM's spend update upserts its end user table:
// a put conditioned on the item not existing (a concurrent creation
// cancels the transaction: re-read and retry, then it is an update), and
// one addition to the count of end users. None: nil.
func EndUserCreates(table string, states map[keys.Ref]keys.RecordSpend, deltas []keys.SpendDelta) []types.TransactWriteItem {
	var items []types.TransactWriteItem
	idx := map[keys.Ref]int{}
	for _, d := range deltas {
		if _, ok := states[d.Ref]; ok || !keys.TracksEndUser(d.Ref) {
			continue
		}
		if i, ok := idx[d.Ref]; ok {
			p := items[i].Put
			p.Item[attrSpend] = money(getNanos(p.Item, attrSpend) + d.Nanos)
			continue
		}
		item := newItem(endUserAttrs(keys.EndUser{ID: d.Ref.ID, UpdatedAt: d.At}), endUserPK(d.Ref.ID), keys.KindEndUser, d.At)
		item[attrSpend] = money(d.Nanos)
		idx[d.Ref] = len(items)
		items = append(items, put(table, item, "attribute_not_exists(pk)", nil))
	}
	if len(items) > 0 {
		items = append(items, addCount(table, endUsersPK, int64(len(items))))
	}
	return items
}
