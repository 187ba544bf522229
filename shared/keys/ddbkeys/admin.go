package ddbkeys

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/keys"
)

// Admin items and attributes (keys.AdminStore), in the same table:
//
//	key#<hash>          + key_name, metadata (S, JSON object), tags (L of S),
//	                      created_by, updated_at (epoch ms), updated_by
//	team#<id>           + members (L of M {user_id, role}), metadata, updated_at
//	alias#<key_alias>   kind "alias", key_hash: makes key_alias unique; written
//	                    in the same TransactWriteItems as its key
//	user#<id>           kind "user", email, alias (user_alias), user_role, models,
//	                    rpm_limit, tpm_limit, teams (L of S), metadata,
//	                    created_at, updated_at, budget and spend attributes
//	member#<team>#<user> kind "member", team_id, user_id, role, created_at,
//	                    budget and spend attributes
//	enduser#<id>        kind "enduser", alias, blocked, rpm_limit, tpm_limit,
//	                    created_at, updated_at, budget and spend attributes
//	deleted#<hash>#<ms> kind "deleted_key": the key item as it was, plus
//	                    key_hash, deleted_at (epoch ms), deleted_by
//	moved#<old hash>    kind "moved", key_hash (the new hash), expires_at
//	                    (epoch s): a regenerated key's forwarding marker
//	                    (keys.MoveTTL), written in the regeneration's
//	                    transaction; spend for the old hash follows it
//	                    (FollowMoves). Never read as a key. expires_at is
//	                    the keys table's TTL attribute; DynamoDB deletes
//	                    lazily, so readers compare times themselves
//
// Membership is written in three places (the member item, the team's
// members, the user's teams), always in one TransactWriteItems. Lists are
// Scans filtered on kind: admin traffic is rare and the table small.
const (
	attrKeyName   = "key_name"
	attrMetadata  = "metadata"
	attrTags      = "tags"
	attrCreatedBy = "created_by"
	attrUpdatedAt = "updated_at"
	attrUpdatedBy = "updated_by"
	attrMembers   = "members"
	attrKeyHash   = "key_hash"
	attrEmail     = "email"
	attrUserRole  = "user_role"
	attrTeams     = "teams"
	attrRole      = "role"
	attrDeletedAt = "deleted_at"
	attrDeletedBy = "deleted_by"

	attrExpiresAt = "expires_at" // infra/tables.TTLAttribute

	kindAlias   = "alias"
	kindDeleted = "deleted_key"
	kindMoved   = "moved"
)

func aliasPK(alias string) string            { return "alias#" + alias }
func movedPK(hash string) string             { return "moved#" + hash }
func refPK(kind keys.Kind, id string) string { return keys.Ref{Kind: kind, ID: id}.String() }

// keyAdminAttrs adds the admin fields of k to item (SET) and remove.
func keyAdminAttrs(k keys.Key, item map[string]types.AttributeValue, remove []string) []string {
	item[attrKeyName] = s(k.KeyName)
	item[attrCreatedBy] = s(k.CreatedBy)
	item[attrUpdatedBy] = s(k.UpdatedBy)
	item[attrTags] = list(k.Tags)
	remove = optTime(item, remove, attrUpdatedAt, k.UpdatedAt)
	return optJSON(item, remove, attrMetadata, k.Metadata)
}

func decodeKeyAdmin(item map[string]types.AttributeValue, k *keys.Key) {
	k.KeyName = getString(item, attrKeyName)
	k.CreatedBy = getString(item, attrCreatedBy)
	k.UpdatedBy = getString(item, attrUpdatedBy)
	k.Tags = getList(item, attrTags)
	k.UpdatedAt = getTime(item, attrUpdatedAt)
	k.Metadata = getJSON(item, attrMetadata)
}

// teamAdminAttrs adds the admin settings of t to item; members are written
// only by the membership methods.
func teamAdminAttrs(t keys.Team, item map[string]types.AttributeValue, remove []string) []string {
	remove = optTime(item, remove, attrUpdatedAt, t.UpdatedAt)
	return optJSON(item, remove, attrMetadata, t.Metadata)
}

func decodeTeamAdmin(item map[string]types.AttributeValue, t *keys.Team) {
	t.UpdatedAt = getTime(item, attrUpdatedAt)
	t.Metadata = getJSON(item, attrMetadata)
	if l, ok := item[attrMembers].(*types.AttributeValueMemberL); ok {
		for _, e := range l.Value {
			if m, ok := e.(*types.AttributeValueMemberM); ok {
				t.Members = append(t.Members, keys.TeamMember{UserID: getString(m.Value, attrUserID), Role: getString(m.Value, attrRole)})
			}
		}
	}
}

func optTime(item map[string]types.AttributeValue, remove []string, name string, t time.Time) []string {
	if t.IsZero() {
		return append(remove, name)
	}
	item[name] = n(t.UnixMilli())
	return remove
}

func optJSON(item map[string]types.AttributeValue, remove []string, name string, v json.RawMessage) []string {
	if len(v) == 0 {
		return append(remove, name)
	}
	item[name] = s(string(v))
	return remove
}

func getTime(item map[string]types.AttributeValue, name string) time.Time {
	if ms, ok := getInt(item, name); ok {
		return time.UnixMilli(ms).UTC()
	}
	return time.Time{}
}

func getJSON(item map[string]types.AttributeValue, name string) json.RawMessage {
	if v := getString(item, name); v != "" {
		return json.RawMessage(v)
	}
	return nil
}

// newItem completes the settings of a new record item.
func newItem(set map[string]types.AttributeValue, pk, kind string, created time.Time) map[string]types.AttributeValue {
	set[attrPK] = s(pk)
	set[attrKind] = s(kind)
	set[attrSpend] = money(0)
	set[attrCreated] = n(created.UnixMilli())
	return set
}

// transact runs a TransactWriteItems. A cancelled transaction returns
// errCancelled with the index of the first failed condition.
func (st *Store) transact(ctx context.Context, what string, items []types.TransactWriteItem) error {
	ctx, cancel := st.call(ctx)
	defer cancel()
	_, err := st.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		for i, r := range tc.CancellationReasons {
			if aws.ToString(r.Code) == "ConditionalCheckFailed" {
				return &cancelled{index: i}
			}
		}
		return wrap("write", what, fmt.Errorf("%w: %w", keys.ErrUnavailable, err))
	}
	if err != nil {
		return wrap("write", what, err)
	}
	return nil
}

// cancelled is a transaction whose condition at index failed.
type cancelled struct{ index int }

func (c *cancelled) Error() string { return fmt.Sprintf("condition %d failed", c.index) }

func failedAt(err error) (int, bool) {
	var c *cancelled
	if errors.As(err, &c) {
		return c.index, true
	}
	return -1, false
}

func put(table string, item map[string]types.AttributeValue, cond string, values map[string]types.AttributeValue) types.TransactWriteItem {
	p := &types.Put{TableName: aws.String(table), Item: item}
	if cond != "" {
		p.ConditionExpression = aws.String(cond)
		p.ExpressionAttributeValues = values
	}
	return types.TransactWriteItem{Put: p}
}

func del(table, pk, cond string, values map[string]types.AttributeValue) types.TransactWriteItem {
	d := &types.Delete{TableName: aws.String(table), Key: itemKey(pk)}
	if cond != "" {
		d.ConditionExpression = aws.String(cond)
		d.ExpressionAttributeValues = values
	}
	return types.TransactWriteItem{Delete: d}
}

func (st *Store) aliasDelete(alias, hash string) types.TransactWriteItem {
	return del(st.table, aliasPK(alias), "attribute_not_exists(pk) OR key_hash = :h", map[string]types.AttributeValue{":h": s(hash)})
}

// createKey writes a new key item, and its alias item in the same transaction.
func (st *Store) createKey(ctx context.Context, k keys.Key, item map[string]types.AttributeValue) error {
	what := keyWhat(k.Hash)
	if k.Alias == "" {
		return st.create(ctx, item, what)
	}
	err := st.transact(ctx, what, []types.TransactWriteItem{
		put(st.table, item, "attribute_not_exists(pk)", nil),
		put(st.table, map[string]types.AttributeValue{attrPK: s(aliasPK(k.Alias)), attrKind: s(kindAlias), attrKeyHash: s(k.Hash)},
			"attribute_not_exists(pk)", nil),
	})
	switch i, ok := failedAt(err); {
	case ok && i == 0:
		return fmt.Errorf("%s: %w", what, keys.ErrExists)
	case ok:
		return fmt.Errorf("key alias %q: %w", k.Alias, keys.ErrAliasExists)
	}
	return err
}

// updateKey SETs the settings of an existing key; a changed alias moves its
// alias item in the same transaction, conditioned on the alias read.
func (st *Store) updateKey(ctx context.Context, k keys.Key, set map[string]types.AttributeValue, remove []string) (keys.Key, error) {
	what := keyWhat(k.Hash)
	delete(set, attrCreatedBy)
	old, err := st.get(ctx, keyPK(k.Hash), what)
	if err != nil {
		return keys.Key{}, err
	}
	oldAlias := getString(old, attrAlias)
	if oldAlias == k.Alias {
		item, err := st.update(ctx, keyPK(k.Hash), what, set, remove)
		if err != nil {
			return keys.Key{}, err
		}
		return decodeKey(k.Hash, item), nil
	}
	upd := updateItem(st.table, keyPK(k.Hash), set, remove)
	upd.Update.ConditionExpression = aws.String("attribute_exists(pk) AND #alias = :oldalias")
	upd.Update.ExpressionAttributeNames["#alias"] = attrAlias
	upd.Update.ExpressionAttributeValues[":oldalias"] = s(oldAlias)
	items := []types.TransactWriteItem{upd}
	if k.Alias != "" {
		items = append(items, put(st.table, map[string]types.AttributeValue{attrPK: s(aliasPK(k.Alias)), attrKind: s(kindAlias), attrKeyHash: s(k.Hash)},
			"attribute_not_exists(pk)", nil))
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

// updateItem returns a transaction Update that SETs set and REMOVEs remove
// on an existing item.
func updateItem(table, pk string, set map[string]types.AttributeValue, remove []string) types.TransactWriteItem {
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	var sets, rems []string
	for i, name := range sortedNames(set) {
		names[fmt.Sprintf("#n%d", i)] = name
		values[fmt.Sprintf(":v%d", i)] = set[name]
		sets = append(sets, fmt.Sprintf("#n%d = :v%d", i, i))
	}
	for i, name := range remove {
		names[fmt.Sprintf("#r%d", i)] = name
		rems = append(rems, fmt.Sprintf("#r%d", i))
	}
	expr := ""
	if len(sets) > 0 {
		expr = "SET " + strings.Join(sets, ", ")
	}
	if len(rems) > 0 {
		expr += " REMOVE " + strings.Join(rems, ", ")
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(table),
		Key:                       itemKey(pk),
		UpdateExpression:          aws.String(strings.TrimSpace(expr)),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

func sortedNames(m map[string]types.AttributeValue) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// GetKeyByAlias implements keys.AdminStore.
func (st *Store) GetKeyByAlias(ctx context.Context, alias string) (keys.Key, error) {
	if alias == "" {
		return keys.Key{}, fmt.Errorf("key alias: %w", keys.ErrNotFound)
	}
	item, err := st.get(ctx, aliasPK(alias), "key alias "+alias)
	if err != nil {
		return keys.Key{}, err
	}
	return st.GetKey(ctx, getString(item, attrKeyHash))
}

// ArchiveKey implements keys.AdminStore: one transaction deletes the key
// (conditioned on its spend as read, so no spend is lost) and its alias
// item, and writes the audit copy.
func (st *Store) ArchiveKey(ctx context.Context, hash, by string) (keys.Key, error) {
	what := keyWhat(hash)
	if !keys.ValidHash(hash) {
		return keys.Key{}, fmt.Errorf("key: %w", keys.ErrNotFound)
	}
	for attempt := 0; ; attempt++ {
		item, err := st.get(ctx, keyPK(hash), what)
		if err != nil {
			return keys.Key{}, err
		}
		k := decodeKey(hash, item)
		now := time.Now()
		copyItem := make(map[string]types.AttributeValue, len(item)+4)
		for name, v := range item {
			copyItem[name] = v
		}
		copyItem[attrPK] = s(fmt.Sprintf("deleted#%s#%d", hash, now.UnixNano()))
		copyItem[attrKind] = s(kindDeleted)
		copyItem[attrKeyHash] = s(hash)
		copyItem[attrDeletedAt] = n(now.UnixMilli())
		copyItem[attrDeletedBy] = s(by)
		cond, names, values := sameSpend(item)
		items := []types.TransactWriteItem{del(st.table, keyPK(hash), cond, values), put(st.table, copyItem, "", nil)}
		items[0].Delete.ExpressionAttributeNames = names
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

// RegenerateKey implements keys.AdminStore: the new key item carries the
// old one's spend attributes; one transaction writes it, deletes the old
// one (conditioned on its spend as read), moves the alias and leaves the
// old hash's forwarding marker (moved#<old>), so that spend events still
// carrying the old hash reach the key.
func (st *Store) RegenerateKey(ctx context.Context, oldHash string, k keys.Key) (keys.Key, error) {
	if err := k.Validate(); err != nil {
		return keys.Key{}, err
	}
	what := keyWhat(oldHash)
	if !keys.ValidHash(oldHash) {
		return keys.Key{}, fmt.Errorf("key: %w", keys.ErrNotFound)
	}
	for attempt := 0; ; attempt++ {
		old, err := st.get(ctx, keyPK(oldHash), what)
		if err != nil {
			return keys.Key{}, err
		}
		set, _ := keySettings(k)
		item := map[string]types.AttributeValue{}
		for _, name := range []string{attrSpend, attrPeriodStart, attrPeriodSpend, attrSoftAlerted, attrCreated, attrCreatedBy} {
			if v, ok := old[name]; ok {
				item[name] = v
			}
		}
		delete(set, attrCreatedBy)
		for name, v := range set {
			item[name] = v
		}
		item[attrPK] = s(keyPK(k.Hash))
		item[attrKind] = s("key")
		oldAlias := getString(old, attrAlias)
		cond, names, values := sameSpend(old)
		items := []types.TransactWriteItem{del(st.table, keyPK(oldHash), cond, values), put(st.table, item, "attribute_not_exists(pk)", nil)}
		items[0].Delete.ExpressionAttributeNames = names
		if k.Alias != "" {
			items = append(items, put(st.table, map[string]types.AttributeValue{attrPK: s(aliasPK(k.Alias)), attrKind: s(kindAlias), attrKeyHash: s(k.Hash)},
				"attribute_not_exists(pk) OR key_hash = :h", map[string]types.AttributeValue{":h": s(oldHash)}))
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

// scan returns every item of kind (a paged, consistent Scan).
func (st *Store) scan(ctx context.Context, kind string) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		cctx, cancel := st.call(ctx)
		res, err := st.client.Scan(cctx, &dynamodb.ScanInput{
			TableName:                 aws.String(st.table),
			ConsistentRead:            aws.Bool(true),
			FilterExpression:          aws.String("#kind = :kind"),
			ExpressionAttributeNames:  map[string]string{"#kind": attrKind},
			ExpressionAttributeValues: map[string]types.AttributeValue{":kind": s(kind)},
			ExclusiveStartKey:         start,
		})
		cancel()
		if err != nil {
			return nil, wrap("list", kind, err)
		}
		out = append(out, res.Items...)
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

func idOf(item map[string]types.AttributeValue) string {
	_, id, _ := strings.Cut(getString(item, attrPK), "#")
	return id
}

// ListKeys implements keys.AdminStore.
func (st *Store) ListKeys(ctx context.Context, f keys.KeyFilter) ([]keys.Key, error) {
	items, err := st.scan(ctx, "key")
	if err != nil {
		return nil, err
	}
	var out []keys.Key
	for _, item := range items {
		if k := decodeKey(idOf(item), item); f.Match(k) {
			out = append(out, k)
		}
	}
	keys.SortKeys(out)
	return out, nil
}

// ListDeletedKeys implements keys.AdminStore.
func (st *Store) ListDeletedKeys(ctx context.Context, f keys.KeyFilter) ([]keys.DeletedKey, error) {
	items, err := st.scan(ctx, kindDeleted)
	if err != nil {
		return nil, err
	}
	var out []keys.DeletedKey
	for _, item := range items {
		d := keys.DeletedKey{Key: decodeKey(getString(item, attrKeyHash), item), DeletedAt: getTime(item, attrDeletedAt), DeletedBy: getString(item, attrDeletedBy)}
		if f.Match(d.Key) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b keys.DeletedKey) int {
		return cmp.Or(a.DeletedAt.Compare(b.DeletedAt), strings.Compare(a.Hash, b.Hash))
	})
	return out, nil
}

// ListTeams implements keys.AdminStore.
func (st *Store) ListTeams(ctx context.Context) ([]keys.Team, error) {
	items, err := st.scan(ctx, "team")
	if err != nil {
		return nil, err
	}
	out := make([]keys.Team, 0, len(items))
	for _, item := range items {
		out = append(out, decodeTeam(idOf(item), item))
	}
	slices.SortFunc(out, func(a, b keys.Team) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// deleteTeam deletes a team, its member items and its id in its members'
// teams lists, in one transaction (a team of more than 48 members takes
// several: the team item goes last).
func (st *Store) deleteTeam(ctx context.Context, id string) error {
	what := "team " + id
	item, err := st.get(ctx, teamPK(id), what)
	if err != nil {
		return err
	}
	t := decodeTeam(id, item)
	var items []types.TransactWriteItem
	for _, m := range t.Members {
		items = append(items, del(st.table, refPK(keys.KindMember, keys.MemberID(id, m.UserID)), "", nil))
		if u, err := st.GetUser(ctx, m.UserID); err == nil {
			items = append(items, st.userTeamsUpdate(u.ID, slices.DeleteFunc(u.Teams, func(x string) bool { return x == id }), -1))
		}
		if len(items) >= 96 {
			if err := st.transact(ctx, what, items); err != nil {
				return err
			}
			items = nil
		}
	}
	items = append(items, del(st.table, teamPK(id), "attribute_exists(pk)", nil))
	err = st.transact(ctx, what, items)
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: %w", what, keys.ErrNotFound)
	}
	return err
}

// listSet returns the transaction Update that SETs the list attribute name
// of the item pk to v, on the condition that the item exists and, when
// readLen >= 0, that the list still has the length read (optimistic
// concurrency for read-modify-write of membership lists).
func (st *Store) listSet(pk, name string, v types.AttributeValue, readLen int) types.TransactWriteItem {
	values := map[string]types.AttributeValue{":v": v}
	cond := "attribute_exists(pk)"
	switch {
	case readLen == 0:
		cond += " AND (attribute_not_exists(#a) OR size(#a) = :n)"
		values[":n"] = n(0)
	case readLen > 0:
		cond += " AND size(#a) = :n"
		values[":n"] = n(int64(readLen))
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(st.table),
		Key:                       itemKey(pk),
		UpdateExpression:          aws.String("SET #a = :v"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#a": name},
		ExpressionAttributeValues: values,
	}}
}

func (st *Store) userTeamsUpdate(user string, teams []string, readLen int) types.TransactWriteItem {
	return st.listSet(refPK(keys.KindUser, user), attrTeams, list(teams), readLen)
}

func (st *Store) teamMembersUpdate(team string, members []keys.TeamMember, readLen int) types.TransactWriteItem {
	l := make([]types.AttributeValue, len(members))
	for i, m := range members {
		l[i] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{attrUserID: s(m.UserID), attrRole: s(m.Role)}}
	}
	return st.listSet(teamPK(team), attrMembers, &types.AttributeValueMemberL{Value: l}, readLen)
}

// sameSpend is the condition that the item still has the spend read (so a
// delete or move loses no spend recorded meanwhile).
func sameSpend(item map[string]types.AttributeValue) (string, map[string]string, map[string]types.AttributeValue) {
	names := map[string]string{"#spend": attrSpend}
	if v, ok := item[attrSpend]; ok {
		return "attribute_exists(pk) AND #spend = :spend", names, map[string]types.AttributeValue{":spend": v}
	}
	return "attribute_exists(pk) AND attribute_not_exists(#spend)", names, nil
}

// userSettings returns the settings of u to SET and REMOVE.
func userSettings(u keys.User) (map[string]types.AttributeValue, []string) {
	item, remove := budgetAttrs(u.Budget)
	item[attrEmail] = s(u.Email)
	item[attrAlias] = s(u.Alias)
	item[attrUserRole] = s(string(u.Role))
	item[attrModels] = list(u.Models)
	item[attrRPM] = n(u.RPMLimit)
	item[attrTPM] = n(u.TPMLimit)
	remove = optTime(item, remove, attrUpdatedAt, u.UpdatedAt)
	return item, optJSON(item, remove, attrMetadata, u.Metadata)
}

func decodeUser(id string, item map[string]types.AttributeValue) keys.User {
	u := keys.User{
		ID: id, Email: getString(item, attrEmail), Alias: getString(item, attrAlias),
		Role: keys.UserRole(getString(item, attrUserRole)), Models: getList(item, attrModels),
		Teams: getList(item, attrTeams), Metadata: getJSON(item, attrMetadata),
		CreatedAt: getTime(item, attrCreated), UpdatedAt: getTime(item, attrUpdatedAt),
		Budget: decodeBudget(item),
	}
	u.RPMLimit, _ = getInt(item, attrRPM)
	u.TPMLimit, _ = getInt(item, attrTPM)
	return u
}

func (st *Store) newUserItem(u keys.User) map[string]types.AttributeValue {
	if u.CreatedAt.IsZero() {
		u.CreatedAt = time.Now()
	}
	if u.Role == "" {
		u.Role = keys.RoleInternalUser
	}
	set, _ := userSettings(u)
	item := newItem(set, refPK(keys.KindUser, u.ID), string(keys.KindUser), u.CreatedAt)
	item[attrTeams] = list(nil)
	return item
}

// GetUser implements keys.AdminStore.
func (st *Store) GetUser(ctx context.Context, id string) (keys.User, error) {
	if keys.ValidID("user id", id) != nil {
		return keys.User{}, fmt.Errorf("user: %w", keys.ErrNotFound)
	}
	item, err := st.get(ctx, refPK(keys.KindUser, id), "user "+id)
	if err != nil {
		return keys.User{}, err
	}
	return decodeUser(id, item), nil
}

// CreateUser implements keys.AdminStore.
func (st *Store) CreateUser(ctx context.Context, u keys.User) error {
	if err := u.Validate(); err != nil {
		return err
	}
	return st.create(ctx, st.newUserItem(u), "user "+u.ID)
}

// UpdateUser implements keys.AdminStore.
func (st *Store) UpdateUser(ctx context.Context, u keys.User) (keys.User, error) {
	if err := u.Validate(); err != nil {
		return keys.User{}, err
	}
	set, remove := userSettings(u)
	if u.Role == "" {
		delete(set, attrUserRole)
	}
	item, err := st.update(ctx, refPK(keys.KindUser, u.ID), "user "+u.ID, set, remove)
	if err != nil {
		return keys.User{}, err
	}
	return decodeUser(u.ID, item), nil
}

// DeleteUser implements keys.AdminStore: the user item, its member items
// and its entries in its teams' members, in one transaction.
func (st *Store) DeleteUser(ctx context.Context, id string) error {
	u, err := st.GetUser(ctx, id)
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{del(st.table, refPK(keys.KindUser, id), "attribute_exists(pk)", nil)}
	for _, team := range u.Teams {
		items = append(items, del(st.table, refPK(keys.KindMember, keys.MemberID(team, id)), "", nil))
		if t, err := st.GetTeam(ctx, team); err == nil {
			items = append(items, st.teamMembersUpdate(team, slices.DeleteFunc(t.Members, func(m keys.TeamMember) bool { return m.UserID == id }), -1))
		}
	}
	err = st.transact(ctx, "user "+id, items)
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("user %s: changed concurrently or gone: %w", id, keys.ErrNotFound)
	}
	return err
}

// ListUsers implements keys.AdminStore.
func (st *Store) ListUsers(ctx context.Context) ([]keys.User, error) {
	items, err := st.scan(ctx, string(keys.KindUser))
	if err != nil {
		return nil, err
	}
	out := make([]keys.User, 0, len(items))
	for _, item := range items {
		out = append(out, decodeUser(idOf(item), item))
	}
	slices.SortFunc(out, func(a, b keys.User) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func memberSettings(m keys.Member) (map[string]types.AttributeValue, []string) {
	item, remove := budgetAttrs(m.Budget)
	item[attrTeamID] = s(m.TeamID)
	item[attrUserID] = s(m.UserID)
	item[attrRole] = s(m.Role)
	return item, remove
}

func decodeMember(item map[string]types.AttributeValue) keys.Member {
	return keys.Member{
		TeamID: getString(item, attrTeamID), UserID: getString(item, attrUserID), Role: getString(item, attrRole),
		CreatedAt: getTime(item, attrCreated), Budget: decodeBudget(item),
	}
}

// GetMember implements keys.AdminStore.
func (st *Store) GetMember(ctx context.Context, team, user string) (keys.Member, error) {
	id := keys.MemberID(team, user)
	item, err := st.get(ctx, refPK(keys.KindMember, id), "member "+id)
	if err != nil {
		return keys.Member{}, err
	}
	return decodeMember(item), nil
}

// AddMember implements keys.AdminStore: the member item, the team's
// members (conditioned on the list read) and the user's teams (or a new
// user) in one transaction.
func (st *Store) AddMember(ctx context.Context, m keys.Member) error {
	if err := m.Validate(); err != nil {
		return err
	}
	what := "member " + keys.MemberID(m.TeamID, m.UserID)
	for attempt := 0; ; attempt++ {
		t, err := st.GetTeam(ctx, m.TeamID)
		if err != nil {
			return err
		}
		if t.Role(m.UserID) != "" {
			return fmt.Errorf("%s: %w", what, keys.ErrExists)
		}
		if m.CreatedAt.IsZero() {
			m.CreatedAt = time.Now()
		}
		set, _ := memberSettings(m)
		items := []types.TransactWriteItem{
			put(st.table, newItem(set, m.Ref().String(), string(keys.KindMember), m.CreatedAt), "attribute_not_exists(pk)", nil),
			st.teamMembersUpdate(m.TeamID, append(t.Members, keys.TeamMember{UserID: m.UserID, Role: m.Role}), len(t.Members)),
		}
		u, err := st.GetUser(ctx, m.UserID)
		switch {
		case errors.Is(err, keys.ErrNotFound):
			nu := st.newUserItem(keys.User{ID: m.UserID, Role: keys.RoleInternalUser})
			nu[attrTeams] = list([]string{m.TeamID})
			items = append(items, put(st.table, nu, "attribute_not_exists(pk)", nil))
		case err != nil:
			return err
		default:
			items = append(items, st.userTeamsUpdate(m.UserID, append(u.Teams, m.TeamID), len(u.Teams)))
		}
		err = st.transact(ctx, what, items)
		i, ok := failedAt(err)
		switch {
		case ok && i == 0:
			return fmt.Errorf("%s: %w", what, keys.ErrExists)
		case ok && attempt < 5:
			continue // the team or the user changed meanwhile
		case ok:
			return fmt.Errorf("%s: %w: changed concurrently", what, keys.ErrUnavailable)
		}
		return err
	}
}

// UpdateMember implements keys.AdminStore.
func (st *Store) UpdateMember(ctx context.Context, m keys.Member) (keys.Member, error) {
	if err := m.Validate(); err != nil {
		return keys.Member{}, err
	}
	what := "member " + keys.MemberID(m.TeamID, m.UserID)
	if _, err := st.GetMember(ctx, m.TeamID, m.UserID); err != nil {
		return keys.Member{}, err
	}
	t, err := st.GetTeam(ctx, m.TeamID)
	if err != nil {
		return keys.Member{}, err
	}
	members := slices.Clone(t.Members)
	for i := range members {
		if members[i].UserID == m.UserID {
			members[i].Role = m.Role
		}
	}
	set, remove := memberSettings(m)
	err = st.transact(ctx, what, []types.TransactWriteItem{
		updateItem(st.table, m.Ref().String(), set, remove),
		st.teamMembersUpdate(m.TeamID, members, len(t.Members)),
	})
	if _, ok := failedAt(err); ok {
		return keys.Member{}, fmt.Errorf("%s: changed concurrently or gone: %w", what, keys.ErrNotFound)
	}
	if err != nil {
		return keys.Member{}, err
	}
	return st.GetMember(ctx, m.TeamID, m.UserID)
}

// RemoveMember implements keys.AdminStore.
func (st *Store) RemoveMember(ctx context.Context, team, user string) error {
	what := "member " + keys.MemberID(team, user)
	t, err := st.GetTeam(ctx, team)
	if err != nil {
		return err
	}
	if _, err := st.GetMember(ctx, team, user); err != nil {
		return err
	}
	items := []types.TransactWriteItem{
		del(st.table, refPK(keys.KindMember, keys.MemberID(team, user)), "attribute_exists(pk)", nil),
		st.teamMembersUpdate(team, slices.DeleteFunc(slices.Clone(t.Members), func(m keys.TeamMember) bool { return m.UserID == user }), len(t.Members)),
	}
	if u, err := st.GetUser(ctx, user); err == nil {
		items = append(items, st.userTeamsUpdate(user, slices.DeleteFunc(u.Teams, func(x string) bool { return x == team }), -1))
	}
	err = st.transact(ctx, what, items)
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: changed concurrently or gone: %w", what, keys.ErrNotFound)
	}
	return err
}

func endUserSettings(e keys.EndUser) (map[string]types.AttributeValue, []string) {
	item, remove := budgetAttrs(e.Budget)
	item[attrAlias] = s(e.Alias)
	item[attrBlocked] = &types.AttributeValueMemberBOOL{Value: e.Blocked}
	item[attrRPM] = n(e.RPMLimit)
	item[attrTPM] = n(e.TPMLimit)
	return item, optTime(item, remove, attrUpdatedAt, e.UpdatedAt)
}

func decodeEndUser(id string, item map[string]types.AttributeValue) keys.EndUser {
	e := keys.EndUser{
		ID: id, Alias: getString(item, attrAlias), Blocked: getBool(item, attrBlocked),
		CreatedAt: getTime(item, attrCreated), UpdatedAt: getTime(item, attrUpdatedAt), Budget: decodeBudget(item),
	}
	e.RPMLimit, _ = getInt(item, attrRPM)
	e.TPMLimit, _ = getInt(item, attrTPM)
	return e
}

// GetEndUser implements keys.AdminStore.
func (st *Store) GetEndUser(ctx context.Context, id string) (keys.EndUser, error) {
	if keys.ValidID("end user id", id) != nil {
		return keys.EndUser{}, fmt.Errorf("end user: %w", keys.ErrNotFound)
	}
	item, err := st.get(ctx, refPK(keys.KindEndUser, id), "end user "+id)
	if err != nil {
		return keys.EndUser{}, err
	}
	return decodeEndUser(id, item), nil
}

// CreateEndUser implements keys.AdminStore.
func (st *Store) CreateEndUser(ctx context.Context, e keys.EndUser) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now()
	}
	set, _ := endUserSettings(e)
	what := "end user " + e.ID
	err := st.transact(ctx, what, []types.TransactWriteItem{
		put(st.table, newItem(set, refPK(keys.KindEndUser, e.ID), string(keys.KindEndUser), e.CreatedAt), "attribute_not_exists(pk)", nil),
		st.endUserCount(1),
	})
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: %w", what, keys.ErrExists)
	}
	return err
}

// UpdateEndUser implements keys.AdminStore.
func (st *Store) UpdateEndUser(ctx context.Context, e keys.EndUser) (keys.EndUser, error) {
	if err := e.Validate(); err != nil {
		return keys.EndUser{}, err
	}
	set, remove := endUserSettings(e)
	item, err := st.update(ctx, refPK(keys.KindEndUser, e.ID), "end user "+e.ID, set, remove)
	if err != nil {
		return keys.EndUser{}, err
	}
	return decodeEndUser(e.ID, item), nil
}

// DeleteEndUser implements keys.AdminStore.
func (st *Store) DeleteEndUser(ctx context.Context, id string) error {
	what := "end user " + id
	err := st.transact(ctx, what, []types.TransactWriteItem{
		del(st.table, refPK(keys.KindEndUser, id), "attribute_exists(pk)", nil),
		st.endUserCount(-1),
	})
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: %w", what, keys.ErrNotFound)
	}
	return err
}

// BlockEndUser implements keys.AdminStore.
func (st *Store) BlockEndUser(ctx context.Context, id string, blocked bool) error {
	_, err := st.update(ctx, refPK(keys.KindEndUser, id), "end user "+id,
		map[string]types.AttributeValue{attrBlocked: &types.AttributeValueMemberBOOL{Value: blocked}}, nil)
	return err
}

// ListEndUsers implements keys.AdminStore.
func (st *Store) ListEndUsers(ctx context.Context) ([]keys.EndUser, error) {
	items, err := st.scan(ctx, string(keys.KindEndUser))
	if err != nil {
		return nil, err
	}
	out := make([]keys.EndUser, 0, len(items))
	for _, item := range items {
		out = append(out, decodeEndUser(idOf(item), item))
	}
	slices.SortFunc(out, func(a, b keys.EndUser) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
