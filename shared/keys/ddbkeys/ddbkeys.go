// Package ddbkeys is the DynamoDB implementation of the keys ports
// (keys.Reader, keys.Admin, keys.Spender) on the KEYS_TABLE
// (infra/tables.Keys).
//
// Every record is one item (partition key "pk", no sort key) with its
// kind, its settings (settings.go: models, rpm_limit, tpm_limit, blocked,
// metadata, the budget and the spend attributes) and the fields of its
// kind, each encoded in its own file:
//
//	key#<sha256 hex>     kind "key" (key.go)
//	team#<id>            kind "team" (team.go)
//	user#<id>            kind "user" (user.go)
//	member#<team>#<user> kind "member" (member.go)
//	enduser#<id>         kind "enduser" (enduser.go)
//	org#<id>             kind "org" (org.go)
//	orgmember#<org>#<u>  kind "orgmember": a user's membership of an organization (org.go)
//	alias#<key_alias>    kind "alias", key_hash: makes key_alias unique; written
//	                     in the same TransactWriteItems as its key
//	deleted#<hash>#<ns>  kind "deleted_key": the key item as it was, plus
//	                     key_hash, deleted_at (epoch ms), deleted_by
//	moved#<old hash>     kind "moved": a regenerated key's forwarding marker (moves.go)
//	meta#endusers        n: the count of end user records (enduser.go)
//	budget#<id>          kind "budget": a reusable budget (budget.go)
//
// spend is created as 0 and changed only by ADD, so concurrent spend
// updates never lose an increment; updates of settings SET every other
// attribute and never touch spend. Lists are Scans filtered on kind: admin
// traffic is rare and the table small.
package ddbkeys

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// Options tune a Store.
type Options = ddb.Options

// Store is the keys store on DynamoDB.
type Store struct {
	client  *dynamodb.Client
	table   string
	timeout time.Duration
	records storeRecords // records.go
}

var (
	_ keys.Admin   = (*Store)(nil)
	_ keys.Spender = (*Store)(nil)
)

// New returns a Store on the keys table named table (build client with
// ddb.NewClient).
func New(client *dynamodb.Client, table string, o Options) *Store {
	t := o.Table(client, table)
	st := &Store{client: t.Client, table: t.Name, timeout: t.Timeout}
	st.records = st.newRecords()
	return st
}

// Attributes every record item has.
const (
	attrPK      = "pk"
	attrKind    = "kind"
	attrCreated = "created_at"
	attrUpdated = "updated_at"
)

func refPK(kind keys.Kind, id string) string { return keys.Ref{Kind: kind, ID: id}.String() }

func (st *Store) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, st.timeout)
}

func wrap(op, what string, err error) error {
	if ddb.Unavailable(err) {
		return fmt.Errorf("%s %s: %w: %w", op, what, keys.ErrUnavailable, err)
	}
	return fmt.Errorf("%s %s: %w", op, what, err)
}

// get reads one item with a strongly consistent read.
func (st *Store) get(ctx context.Context, pk, what string) (ddb.Item, error) {
	ctx, cancel := st.call(ctx)
	defer cancel()
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.table), Key: ddb.PK(pk), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, wrap("get", what, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("%s: %w", what, keys.ErrNotFound)
	}
	return out.Item, nil
}

// create puts a new item unless its pk exists.
func (st *Store) create(ctx context.Context, item ddb.Item, what string) error {
	ctx, cancel := st.call(ctx)
	defer cancel()
	_, err := st.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(st.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if ddb.ConditionFailed(err) {
		return fmt.Errorf("%s: %w", what, keys.ErrExists)
	}
	if err != nil {
		return wrap("create", what, err)
	}
	return nil
}

// update SETs a.set (and REMOVEs a.remove) on an existing item and returns it.
func (st *Store) update(ctx context.Context, pk, what string, a attrs) (ddb.Item, error) {
	item, err := st.runUpdate(ctx, updateItem(st.table, pk, a).Update, types.ReturnValueAllNew)
	if ddb.ConditionFailed(err) {
		return nil, fmt.Errorf("%s: %w", what, keys.ErrNotFound)
	}
	if err != nil {
		return nil, wrap("update", what, err)
	}
	return item, nil
}

// runUpdate runs the transaction Update in as one UpdateItem that returns
// rv of the item.
func (st *Store) runUpdate(ctx context.Context, in *types.Update, rv types.ReturnValue) (ddb.Item, error) {
	ctx, cancel := st.call(ctx)
	defer cancel()
	out, err := st.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression,
		ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
		ExpressionAttributeValues: in.ExpressionAttributeValues, ReturnValues: rv,
	})
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
}

// updateItem returns a transaction Update that SETs a.set and REMOVEs
// a.remove on an existing item.
func updateItem(table, pk string, a attrs) types.TransactWriteItem {
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	var sets, rems []string
	for i, name := range sortedNames(a.set) {
		names[fmt.Sprintf("#n%d", i)] = name
		values[fmt.Sprintf(":v%d", i)] = a.set[name]
		sets = append(sets, fmt.Sprintf("#n%d = :v%d", i, i))
	}
	for i, name := range a.remove {
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
	u := &types.Update{
		TableName:                aws.String(table),
		Key:                      ddb.PK(pk),
		UpdateExpression:         aws.String(strings.TrimSpace(expr)),
		ConditionExpression:      aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames: names,
	}
	if len(values) > 0 {
		u.ExpressionAttributeValues = values
	}
	return types.TransactWriteItem{Update: u}
}

// count reads the counter item pk ("n", changed by createCounted and
// deleteCounted) with a strongly consistent read; absent: 0.
func (st *Store) count(ctx context.Context, pk, what string) (int64, error) {
	ctx, cancel := st.call(ctx)
	defer cancel()
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.table), Key: ddb.PK(pk), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, wrap("count", what, err)
	}
	return ddb.Int0(out.Item, "n"), nil
}

// addCount ADDs delta to the counter item pk.
func addCount(table, pk string, delta int64) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(table),
		Key:                       ddb.PK(pk),
		UpdateExpression:          aws.String("ADD #n :d"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": ddb.N(delta)},
	}}
}

// createCounted puts a new item unless its pk exists and counts it in
// the counter item countPK, in one transaction.
func (st *Store) createCounted(ctx context.Context, item ddb.Item, countPK, what string) error {
	err := st.transact(ctx, what, []types.TransactWriteItem{
		put(st.table, item, "attribute_not_exists(pk)", nil),
		addCount(st.table, countPK, 1),
	})
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: %w", what, keys.ErrExists)
	}
	return err
}

// deleteCounted deletes the existing item pk and counts it out of the
// counter item countPK, in one transaction.
func (st *Store) deleteCounted(ctx context.Context, pk, countPK, what string) error {
	err := st.transact(ctx, what, []types.TransactWriteItem{
		del(st.table, pk, "attribute_exists(pk)", nil),
		addCount(st.table, countPK, -1),
	})
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
		values[":n"] = ddb.N(0)
	case readLen > 0:
		cond += " AND size(#a) = :n"
		values[":n"] = ddb.N(int64(readLen))
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(st.table),
		Key:                       ddb.PK(pk),
		UpdateExpression:          aws.String("SET #a = :v"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#a": name},
		ExpressionAttributeValues: values,
	}}
}

// transact runs a TransactWriteItems. A cancelled transaction returns
// *cancelled with the index of the first failed condition.
func (st *Store) transact(ctx context.Context, what string, items []types.TransactWriteItem) error {
	err := st.transactItems(ctx, items)
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

// transactItems runs a TransactWriteItems and returns its error as it is.
func (st *Store) transactItems(ctx context.Context, items []types.TransactWriteItem) error {
	ctx, cancel := st.call(ctx)
	defer cancel()
	_, err := st.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return err
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

func put(table string, item ddb.Item, cond string, values map[string]types.AttributeValue) types.TransactWriteItem {
	p := &types.Put{TableName: aws.String(table), Item: item}
	if cond != "" {
		p.ConditionExpression = aws.String(cond)
		p.ExpressionAttributeValues = values
	}
	return types.TransactWriteItem{Put: p}
}

func del(table, pk, cond string, values map[string]types.AttributeValue) types.TransactWriteItem {
	d := &types.Delete{TableName: aws.String(table), Key: ddb.PK(pk)}
	if cond != "" {
		d.ConditionExpression = aws.String(cond)
		d.ExpressionAttributeValues = values
	}
	return types.TransactWriteItem{Delete: d}
}

// batchGet reads the items of pks that exist, with strongly consistent
// reads (BatchGetItem, 100 at a time, unprocessed keys retried).
func (st *Store) batchGet(ctx context.Context, pks []string) ([]ddb.Item, error) {
	var out []ddb.Item
	for len(pks) > 0 {
		n := min(len(pks), 100)
		chunk := pks[:n]
		pks = pks[n:]
		ks := make([]ddb.Item, len(chunk))
		for i, pk := range chunk {
			ks[i] = ddb.PK(pk)
		}
		req := map[string]types.KeysAndAttributes{st.table: {Keys: ks, ConsistentRead: aws.Bool(true)}}
		for attempt := 0; len(req) > 0; attempt++ {
			if attempt > 0 {
				if err := backoff(ctx, attempt); err != nil {
					return nil, err
				}
			}
			cctx, cancel := st.call(ctx)
			res, err := st.client.BatchGetItem(cctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			cancel()
			if err != nil {
				return nil, err
			}
			out = append(out, res.Responses[st.table]...)
			req = res.UnprocessedKeys
		}
	}
	return out, nil
}

// scan returns every item of kind (a paged, consistent Scan).
func (st *Store) scan(ctx context.Context, kind string) ([]ddb.Item, error) {
	return st.scanWhere(ctx, "#kind = :kind", map[string]string{"#kind": attrKind}, ddb.Item{":kind": ddb.S(kind)}, kind)
}

// scanWhere returns every item filter selects (a paged, consistent Scan);
// what names them in errors.
func (st *Store) scanWhere(ctx context.Context, filter string, names map[string]string, values ddb.Item, what string) ([]ddb.Item, error) {
	var out []ddb.Item
	var start ddb.Item
	for {
		cctx, cancel := st.call(ctx)
		res, err := st.client.Scan(cctx, &dynamodb.ScanInput{
			TableName:                 aws.String(st.table),
			ConsistentRead:            aws.Bool(true),
			FilterExpression:          aws.String(filter),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
			ExclusiveStartKey:         start,
		})
		cancel()
		if err != nil {
			return nil, wrap("list", what, err)
		}
		out = append(out, res.Items...)
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// list returns every record of kind, decoded, by id.
func list[T any](ctx context.Context, st *Store, kind keys.Kind, decode func(id string, item ddb.Item) T) ([]T, error) {
	items, err := st.scan(ctx, string(kind))
	if err != nil {
		return nil, err
	}
	byID := make(map[string]T, len(items))
	ids := make([]string, 0, len(items))
	for _, item := range items {
		_, id, _ := strings.Cut(ddb.String(item, attrPK), "#")
		byID[id] = decode(id, item)
		ids = append(ids, id)
	}
	out := make([]T, 0, len(items))
	for _, id := range sortedStrings(ids) {
		out = append(out, byID[id])
	}
	return out, nil
}

// read reads the record r, as decode makes it; an id that valid refuses
// is ErrNotFound without a read.
func read[T any](ctx context.Context, st *Store, r keys.Ref, valid bool, decode func(id string, item ddb.Item) T) (T, error) {
	var zero T
	if !valid {
		return zero, fmt.Errorf("%s: %w", strings.TrimSpace(whatOf(keys.Ref{Kind: r.Kind})), keys.ErrNotFound)
	}
	item, err := st.get(ctx, r.String(), whatOf(r))
	if err != nil {
		return zero, err
	}
	return decode(r.ID, item), nil
}

// write checks v, SETs (and REMOVEs) its attributes a on the existing
// record r and returns it as decode makes it.
func write[T any](ctx context.Context, st *Store, v interface{ Validate() error }, r keys.Ref, a attrs, decode func(id string, item ddb.Item) T) (T, error) {
	var zero T
	if err := v.Validate(); err != nil {
		return zero, err
	}
	item, err := st.update(ctx, r.String(), whatOf(r), a)
	if err != nil {
		return zero, err
	}
	return decode(r.ID, item), nil
}

// Block implements keys.Admin.
func (st *Store) Block(ctx context.Context, r keys.Ref, blocked bool) error {
	what := whatOf(r)
	switch r.Kind {
	case keys.KindKey, keys.KindTeam, keys.KindEndUser:
	default:
		return fmt.Errorf("block %s: %w: only keys, teams and end users are blocked", what, keys.ErrInvalid)
	}
	_, err := st.update(ctx, r.String(), what, attrs{set: ddb.Item{attrBlocked: ddb.Bool(blocked)}})
	return err
}

// Delete implements keys.Admin.
func (st *Store) Delete(ctx context.Context, r keys.Ref) error {
	switch r.Kind {
	case keys.KindKey:
		_, err := st.ArchiveKey(ctx, r.ID, "")
		return err
	case keys.KindTeam:
		return st.deleteTeam(ctx, r.ID)
	case keys.KindUser:
		return st.deleteUser(ctx, r.ID)
	case keys.KindEndUser:
		return st.deleteEndUser(ctx, r.ID)
	case keys.KindOrg:
		return st.deleteOrg(ctx, r.ID)
	}
	return fmt.Errorf("delete %s: %w: memberships end through RemoveMember", r, keys.ErrInvalid)
}

// whatOf names r in errors.
func whatOf(r keys.Ref) string {
	switch r.Kind {
	case keys.KindKey:
		return keyWhat(r.ID)
	case keys.KindEndUser:
		return "end user " + r.ID
	case keys.KindOrg:
		return "organization " + r.ID
	case keys.KindOrgMember:
		return "organization member " + r.ID
	}
	return string(r.Kind) + " " + r.ID
}

// prepared checks a new record v and sets its CreatedAt (created) to now
// when it is zero.
func prepared(v interface{ Validate() error }, created *time.Time) error {
	if err := v.Validate(); err != nil {
		return err
	}
	if created.IsZero() {
		*created = time.Now()
	}
	return nil
}
