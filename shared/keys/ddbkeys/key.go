package ddbkeys

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// A key's item: pk "key#<hash>", kind "key", its settings (settings.go)
// and:
//
//	alias, team_id, user_id, key_name, created_by, updated_by   S
//	bound_by, bound_team, bound_org (a key minted for another user) S, absent when unbound
//	tags                                                        L of S
//	expires, created_at, updated_at                             N (epoch ms); expires absent: never
//
// Its alias item alias#<key_alias> (kind "alias", key_hash) is written in
// the same transaction as the key.
const (
	attrAlias     = "alias"
	attrTeamID    = "team_id"
	attrUserID    = "user_id"
	attrExpires   = "expires"
	attrKeyName   = "key_name"
	attrTags      = "tags"
	attrCreatedBy = "created_by"
	attrUpdatedBy = "updated_by"
	attrKeyHash   = "key_hash"
	attrDeletedAt = "deleted_at"
	attrDeletedBy = "deleted_by"
	attrBoundBy   = "bound_by"
	attrBoundTeam = "bound_team"
	attrBoundOrg  = "bound_org"

	kindAlias   = "alias"
	kindDeleted = "deleted_key"
)

func keyPK(hash string) string    { return refPK(keys.KindKey, hash) }
func aliasPK(alias string) string { return "alias#" + alias }

func keyWhat(hash string) string {
	if len(hash) > 12 {
		hash = hash[:12]
	}
	return "key " + hash
}

// keyAttrs encodes the settings of k (created_at aside).
func keyAttrs(k keys.Key) attrs {
	a := settingsAttrs(k.Settings)
	a.set[attrAlias] = ddb.S(k.Alias)
	a.set[attrTeamID] = ddb.S(k.TeamID)
	a.set[attrUserID] = ddb.S(k.UserID)
	a.set[attrKeyName] = ddb.S(k.KeyName)
	a.set[attrCreatedBy] = ddb.S(k.CreatedBy)
	a.set[attrUpdatedBy] = ddb.S(k.UpdatedBy)
	a.set[attrTags] = ddb.List(k.Tags)
	a.opt(attrBoundBy, ddb.S(k.Bound.By), k.Bound.By != "")
	a.opt(attrBoundTeam, ddb.S(k.Bound.Team), k.Bound.Team != "")
	a.opt(attrBoundOrg, ddb.S(k.Bound.Org), k.Bound.Org != "")
	a.time(attrExpires, k.ExpiresAt)
	a.time(attrUpdated, k.UpdatedAt)
	return a
}

func decodeKey(hash string, item ddb.Item) keys.Key {
	return keys.Key{
		Hash: hash, Alias: ddb.String(item, attrAlias), TeamID: ddb.String(item, attrTeamID), UserID: ddb.String(item, attrUserID),
		ExpiresAt: getTime(item, attrExpires), CreatedAt: getTime(item, attrCreated), Settings: decodeSettings(item),
		KeyName: ddb.String(item, attrKeyName), Tags: ddb.Strings(item, attrTags), CreatedBy: ddb.String(item, attrCreatedBy),
		UpdatedAt: getTime(item, attrUpdated), UpdatedBy: ddb.String(item, attrUpdatedBy),
		Bound: keys.Bound{By: ddb.String(item, attrBoundBy), Team: ddb.String(item, attrBoundTeam), Org: ddb.String(item, attrBoundOrg)},
	}
}

func aliasItem(alias, hash string) ddb.Item {
	return ddb.Item{attrPK: ddb.S(aliasPK(alias)), attrKind: ddb.S(kindAlias), attrKeyHash: ddb.S(hash)}
}

func (st *Store) aliasDelete(alias, hash string) types.TransactWriteItem {
	return del(st.table, aliasPK(alias), "attribute_not_exists(pk) OR key_hash = :h", map[string]types.AttributeValue{":h": ddb.S(hash)})
}

// keyItem reads the item of the key hash, as it is; a hash that is not one
// is ErrNotFound without a read.
func (st *Store) keyItem(ctx context.Context, hash string) (ddb.Item, error) {
	return read(ctx, st, keys.Ref{Kind: keys.KindKey, ID: hash}, keys.ValidHash(hash), func(_ string, item ddb.Item) ddb.Item { return item })
}

// GetKey implements keys.Reader.
func (st *Store) GetKey(ctx context.Context, hash string) (keys.Key, error) {
	return read(ctx, st, keys.Ref{Kind: keys.KindKey, ID: hash}, keys.ValidHash(hash), decodeKey)
}

// CreateKey implements keys.Admin: the key item, and its alias item in the
// same transaction.
func (st *Store) CreateKey(ctx context.Context, k keys.Key) error {
	if err := prepared(k, &k.CreatedAt); err != nil {
		return err
	}
	item := newItem(keyAttrs(k), keyPK(k.Hash), keys.KindKey, k.CreatedAt)
	what := keyWhat(k.Hash)
	if k.Alias == "" {
		return st.create(ctx, item, what)
	}
	err := st.transact(ctx, what, []types.TransactWriteItem{
		put(st.table, item, "attribute_not_exists(pk)", nil),
		put(st.table, aliasItem(k.Alias, k.Hash), "attribute_not_exists(pk)", nil),
	})
	switch i, ok := failedAt(err); {
	case ok && i == 0:
		return fmt.Errorf("%s: %w", what, keys.ErrExists)
	case ok:
		return fmt.Errorf("key alias %q: %w", k.Alias, keys.ErrAliasExists)
	}
	return err
}

// UpdateKey implements keys.Admin: a changed alias moves its alias item in
// the same transaction, conditioned on the alias read.
func (st *Store) UpdateKey(ctx context.Context, k keys.Key) (keys.Key, error) {
	if err := k.Validate(); err != nil {
		return keys.Key{}, err
	}
	what := keyWhat(k.Hash)
	a := keyAttrs(k)
	delete(a.set, attrCreatedBy)
	old, err := st.get(ctx, keyPK(k.Hash), what)
	if err != nil {
		return keys.Key{}, err
	}
	oldAlias := ddb.String(old, attrAlias)
	if oldAlias == k.Alias {
		return write(ctx, st, k, keys.Ref{Kind: keys.KindKey, ID: k.Hash}, a, decodeKey)
	}
	upd := updateItem(st.table, keyPK(k.Hash), a)
	upd.Update.ConditionExpression = aws.String("attribute_exists(pk) AND #alias = :oldalias")
	upd.Update.ExpressionAttributeNames["#alias"] = attrAlias
	upd.Update.ExpressionAttributeValues[":oldalias"] = ddb.S(oldAlias)
	items := []types.TransactWriteItem{upd}
	if k.Alias != "" {
		items = append(items, put(st.table, aliasItem(k.Alias, k.Hash), "attribute_not_exists(pk)", nil))
	}
	if oldAlias != "" {
		items = append(items, st.aliasDelete(oldAlias, k.Hash))
	}
	err = st.transact(ctx, what, items)
	switch i, ok := failedAt(err); {
	case ok && i == 0:
		return keys.Key{}, fmt.Errorf("%s: changed concurrently or gone: %w", what, keys.ErrNotFound)
	case ok && i == 1 && k.Alias != "":
		return keys.Key{}, fmt.Errorf("key alias %q: %w", k.Alias, keys.ErrAliasExists)
	case err != nil:
		return keys.Key{}, err
	}
	return st.GetKey(ctx, k.Hash)
}

// GetKeyByAlias implements keys.Admin.
func (st *Store) GetKeyByAlias(ctx context.Context, alias string) (keys.Key, error) {
	if keys.ValidID("key_alias", alias) != nil {
		return keys.Key{}, fmt.Errorf("key alias: %w", keys.ErrNotFound)
	}
	item, err := st.get(ctx, aliasPK(alias), "key alias "+alias)
	if err != nil {
		return keys.Key{}, err
	}
	return st.GetKey(ctx, ddb.String(item, attrKeyHash))
}

// sameSpend is the condition that the item still has the spend read (so a
// delete or move loses no spend recorded meanwhile).
func sameSpend(table, pk string, item ddb.Item) types.TransactWriteItem {
	d := del(table, pk, "attribute_exists(pk) AND attribute_not_exists(#spend)", nil)
	if v, ok := item[attrSpend]; ok {
		d = del(table, pk, "attribute_exists(pk) AND #spend = :spend", map[string]types.AttributeValue{":spend": v})
	}
	d.Delete.ExpressionAttributeNames = map[string]string{"#spend": attrSpend}
	return d
}

// ArchiveKey implements keys.Admin: one transaction deletes the key
// (conditioned on its spend as read, so no spend is lost) and its alias
// item, and writes the audit copy.
func (st *Store) ArchiveKey(ctx context.Context, hash, by string) (keys.Key, error) {
	what := keyWhat(hash)
	for attempt := 0; ; attempt++ {
		item, err := st.keyItem(ctx, hash)
		if err != nil {
			return keys.Key{}, err
		}
		k := decodeKey(hash, item)
		now := time.Now()
		copyItem := maps.Clone(item)
		copyItem[attrPK] = ddb.S(fmt.Sprintf("deleted#%s#%d", hash, now.UnixNano()))
		copyItem[attrKind] = ddb.S(kindDeleted)
		copyItem[attrKeyHash] = ddb.S(hash)
		copyItem[attrDeletedAt] = ddb.N(now.UnixMilli())
		copyItem[attrDeletedBy] = ddb.S(by)
		items := []types.TransactWriteItem{sameSpend(st.table, keyPK(hash), item), put(st.table, copyItem, "", nil)}
		if k.Alias != "" {
			items = append(items, st.aliasDelete(k.Alias, hash))
		}
		err = st.transact(ctx, what, items)
		if i, ok := failedAt(err); ok && i == 0 && attempt < 5 {
			continue // spent or gone meanwhile: read again
		}
		if _, ok := failedAt(err); ok {
			return keys.Key{}, fmt.Errorf("%s: %w", what, keys.ErrNotFound)
		}
		if err != nil {
			return keys.Key{}, err
		}
		return k, nil
	}
}

// RegenerateKey implements keys.Admin: the new key item carries the old
// one's spend attributes; one transaction writes it, deletes the old one
// (conditioned on its spend as read), moves the alias and leaves the old
// hash's forwarding marker (moves.go), so that spend events still carrying
// the old hash reach the key.
func (st *Store) RegenerateKey(ctx context.Context, oldHash string, k keys.Key) (keys.Key, error) {
	if err := k.Validate(); err != nil {
		return keys.Key{}, err
	}
	what := keyWhat(oldHash)
	for attempt := 0; ; attempt++ {
		old, err := st.keyItem(ctx, oldHash)
		if err != nil {
			return keys.Key{}, err
		}
		a := keyAttrs(k)
		delete(a.set, attrCreatedBy)
		item := ddb.Item{}
		for _, name := range []string{attrSpend, attrPeriodStart, attrPeriodSpend, attrSoftAlerted, attrModelSpend, attrCreated, attrCreatedBy} {
			if v, ok := old[name]; ok {
				item[name] = v
			}
		}
		maps.Copy(item, a.set)
		item[attrPK] = ddb.S(keyPK(k.Hash))
		item[attrKind] = ddb.S(string(keys.KindKey))
		oldAlias := ddb.String(old, attrAlias)
		items := []types.TransactWriteItem{sameSpend(st.table, keyPK(oldHash), old), put(st.table, item, "attribute_not_exists(pk)", nil)}
		if k.Alias != "" {
			items = append(items, put(st.table, aliasItem(k.Alias, k.Hash),
				"attribute_not_exists(pk) OR key_hash = :h", map[string]types.AttributeValue{":h": ddb.S(oldHash)}))
		}
		if oldAlias != "" && oldAlias != k.Alias {
			items = append(items, st.aliasDelete(oldAlias, oldHash))
		}
		items = append(items, put(st.table, moveItem(oldHash, k.Hash, time.Now()), "", nil))
		err = st.transact(ctx, what, items)
		i, ok := failedAt(err)
		switch {
		case ok && i == 0 && attempt < 5:
			continue
		case ok && i == 0:
			return keys.Key{}, fmt.Errorf("%s: %w", what, keys.ErrNotFound)
		case ok && i == 1:
			return keys.Key{}, fmt.Errorf("%s: %w", keyWhat(k.Hash), keys.ErrExists)
		case ok && i == 2 && k.Alias != "":
			return keys.Key{}, fmt.Errorf("key alias %q: %w", k.Alias, keys.ErrAliasExists)
		case err != nil:
			return keys.Key{}, err
		}
		return st.GetKey(ctx, k.Hash)
	}
}

// ListKeys implements keys.Admin.
func (st *Store) ListKeys(ctx context.Context, f keys.KeyFilter) ([]keys.Key, error) {
	ks, err := list(ctx, st, keys.KindKey, decodeKey)
	if err != nil {
		return nil, err
	}
	ks = slices.DeleteFunc(ks, func(k keys.Key) bool { return !f.Match(k) })
	if len(ks) == 0 {
		return nil, nil
	}
	keys.SortKeys(ks)
	return ks, nil
}

// ListDeletedKeys implements keys.Admin.
func (st *Store) ListDeletedKeys(ctx context.Context, f keys.KeyFilter) ([]keys.DeletedKey, error) {
	items, err := st.scan(ctx, kindDeleted)
	if err != nil {
		return nil, err
	}
	var out []keys.DeletedKey
	for _, item := range items {
		d := keys.DeletedKey{Key: decodeKey(ddb.String(item, attrKeyHash), item), DeletedAt: getTime(item, attrDeletedAt), DeletedBy: ddb.String(item, attrDeletedBy)}
		if f.Match(d.Key) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b keys.DeletedKey) int {
		return cmp.Or(a.DeletedAt.Compare(b.DeletedAt), strings.Compare(a.Hash, b.Hash))
	})
	return out, nil
}
