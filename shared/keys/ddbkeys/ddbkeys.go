// Package ddbkeys is the DynamoDB implementation of keys.Store, on the
// KEYS_TABLE (infra/tables.Keys).
//
// Items (partition key "pk", no sort key):
//
//	pk "key#<sha256 hex>"  kind "key", alias, team_id, user_id, models (L of S),
//	                       rpm_limit, tpm_limit, max_budget (absent: unlimited),
//	                       spend, blocked, expires (epoch ms, absent: never), created_at (epoch ms)
//	pk "team#<id>"         kind "team", alias, models, rpm_limit, tpm_limit,
//	                       max_budget, spend, blocked, created_at
//
// spend is created as 0 and changed only by ADD, so concurrent spend
// updates never lose an increment; UpdateKey/UpdateTeam SET every other
// attribute and never touch spend.
package ddbkeys

import (
	"context"

	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// Options tune a Store.
type Options struct {
	Timeout time.Duration // per call, on top of the caller's deadline; 0: 2s
}

// Store is a keys.Store on DynamoDB.
type Store struct {
	client  *dynamodb.Client
	table   string
	timeout time.Duration
}

var _ keys.Store = (*Store)(nil)

// New returns a Store on the keys table named table (build client with
// ddb.NewClient).
func New(client *dynamodb.Client, table string, o Options) *Store {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	return &Store{client: client, table: table, timeout: o.Timeout}
}

// Attribute names.
const (
	attrPK        = "pk"
	attrKind      = "kind"
	attrAlias     = "alias"
	attrTeamID    = "team_id"
	attrUserID    = "user_id"
	attrModels    = "models"
	attrRPM       = "rpm_limit"
	attrTPM       = "tpm_limit"
	attrMaxBudget = "max_budget"
	attrSpend     = "spend"
	attrBlocked   = "blocked"
	attrExpires   = "expires"
	attrCreated   = "created_at"
)

func keyPK(hash string) string { return string(keys.KindKey) + "#" + hash }
func teamPK(id string) string  { return string(keys.KindTeam) + "#" + id }

func itemKey(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: s(pk)}
}

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
func (st *Store) get(ctx context.Context, pk, what string) (map[string]types.AttributeValue, error) {
	ctx, cancel := st.call(ctx)
	defer cancel()
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.table), Key: itemKey(pk), ConsistentRead: aws.Bool(true),
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
func (st *Store) create(ctx context.Context, item map[string]types.AttributeValue, what string) error {
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

// update SETs set (and REMOVEs remove) on an existing item and returns it.
func (st *Store) update(ctx context.Context, pk, what string, set map[string]types.AttributeValue, remove []string) (map[string]types.AttributeValue, error) {
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	expr := ""
	i := 0
	for name, v := range set {
		i++
		sep := ", "
		if expr == "" {
			sep = "SET "
		}
		expr += fmt.Sprintf("%s#n%d = :v%d", sep, i, i)
		names[fmt.Sprintf("#n%d", i)] = name
		values[fmt.Sprintf(":v%d", i)] = v
	}
	for j, name := range remove {
		sep := ", "
		if j == 0 {
			sep = " REMOVE "
		}
		expr += fmt.Sprintf("%s#r%d", sep, j)
		names[fmt.Sprintf("#r%d", j)] = name
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                aws.String(st.table),
		Key:                      itemKey(pk),
		UpdateExpression:         aws.String(expr),
		ConditionExpression:      aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames: names,
		ReturnValues:             types.ReturnValueAllNew,
	}
	if len(values) > 0 {
		in.ExpressionAttributeValues = values
	}
	ctx, cancel := st.call(ctx)
	defer cancel()
	out, err := st.client.UpdateItem(ctx, in)
	if ddb.ConditionFailed(err) {
		return nil, fmt.Errorf("%s: %w", what, keys.ErrNotFound)
	}
	if err != nil {
		return nil, wrap("update", what, err)
	}
	return out.Attributes, nil
}

func keyWhat(hash string) string {
	if len(hash) > 12 {
		hash = hash[:12]
	}
	return "key " + hash
}

// GetKey implements keys.Store.
func (st *Store) GetKey(ctx context.Context, hash string) (keys.Key, error) {
	if !keys.ValidHash(hash) {
		return keys.Key{}, fmt.Errorf("key: %w", keys.ErrNotFound)
	}
	item, err := st.get(ctx, keyPK(hash), keyWhat(hash))
	if err != nil {
		return keys.Key{}, err
	}
	return decodeKey(hash, item), nil
}

// CreateKey implements keys.Store.
func (st *Store) CreateKey(ctx context.Context, k keys.Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = time.Now()
	}
	item, _ := keySettings(k)
	item[attrPK] = s(keyPK(k.Hash))
	item[attrKind] = s("key")
	item[attrSpend] = money(0)
	item[attrCreated] = n(k.CreatedAt.UnixMilli())
	return st.createKey(ctx, k, item)
}

// UpdateKey implements keys.Store.
func (st *Store) UpdateKey(ctx context.Context, k keys.Key) (keys.Key, error) {
	if err := k.Validate(); err != nil {
		return keys.Key{}, err
	}
	set, remove := keySettings(k)
	return st.updateKey(ctx, k, set, remove)
}

// DeleteKey implements keys.Store.
func (st *Store) DeleteKey(ctx context.Context, hash string) error {
	_, err := st.ArchiveKey(ctx, hash, "")
	return err
}

// BlockKey implements keys.Store.
func (st *Store) BlockKey(ctx context.Context, hash string, blocked bool) error {
	_, err := st.update(ctx, keyPK(hash), keyWhat(hash),
		map[string]types.AttributeValue{attrBlocked: &types.AttributeValueMemberBOOL{Value: blocked}}, nil)
	return err
}

// GetTeam implements keys.Store.
func (st *Store) GetTeam(ctx context.Context, id string) (keys.Team, error) {
	if err := keys.ValidTeamID(id); err != nil {
		return keys.Team{}, fmt.Errorf("team: %w", keys.ErrNotFound)
	}
	item, err := st.get(ctx, teamPK(id), "team "+id)
	if err != nil {
		return keys.Team{}, err
	}
	return decodeTeam(id, item), nil
}

// CreateTeam implements keys.Store.
func (st *Store) CreateTeam(ctx context.Context, t keys.Team) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now()
	}
	item, _ := teamSettings(t)
	item[attrPK] = s(teamPK(t.ID))
	item[attrKind] = s("team")
	item[attrSpend] = money(0)
	item[attrCreated] = n(t.CreatedAt.UnixMilli())
	return st.create(ctx, item, "team "+t.ID)
}

// UpdateTeam implements keys.Store.
func (st *Store) UpdateTeam(ctx context.Context, t keys.Team) (keys.Team, error) {
	if err := t.Validate(); err != nil {
		return keys.Team{}, err
	}
	set, remove := teamSettings(t)
	item, err := st.update(ctx, teamPK(t.ID), "team "+t.ID, set, remove)
	if err != nil {
		return keys.Team{}, err
	}
	return decodeTeam(t.ID, item), nil
}

// DeleteTeam implements keys.Store.
func (st *Store) DeleteTeam(ctx context.Context, id string) error {
	return st.deleteTeam(ctx, id)
}

// BlockTeam implements keys.Store.
func (st *Store) BlockTeam(ctx context.Context, id string, blocked bool) error {
	_, err := st.update(ctx, teamPK(id), "team "+id,
		map[string]types.AttributeValue{attrBlocked: &types.AttributeValueMemberBOOL{Value: blocked}}, nil)
	return err
}

// keySettings returns the attributes of k's settings to SET, and the names
// of its unset optional ones to REMOVE. Spend attributes are never among
// them.
func keySettings(k keys.Key) (map[string]types.AttributeValue, []string) {
	item, remove := budgetAttrs(k.Budget)
	item[attrAlias] = s(k.Alias)
	item[attrTeamID] = s(k.TeamID)
	item[attrUserID] = s(k.UserID)
	item[attrModels] = list(k.Models)
	item[attrRPM] = n(k.RPMLimit)
	item[attrTPM] = n(k.TPMLimit)
	item[attrBlocked] = &types.AttributeValueMemberBOOL{Value: k.Blocked}
	if k.ExpiresAt.IsZero() {
		remove = append(remove, attrExpires)
	} else {
		item[attrExpires] = n(k.ExpiresAt.UnixMilli())
	}
	return item, keyAdminAttrs(k, item, remove)
}

func teamSettings(t keys.Team) (map[string]types.AttributeValue, []string) {
	item, remove := budgetAttrs(t.Budget)
	item[attrAlias] = s(t.Alias)
	item[attrModels] = list(t.Models)
	item[attrRPM] = n(t.RPMLimit)
	item[attrTPM] = n(t.TPMLimit)
	item[attrBlocked] = &types.AttributeValueMemberBOOL{Value: t.Blocked}
	return item, teamAdminAttrs(t, item, remove)
}

func decodeKey(hash string, item map[string]types.AttributeValue) keys.Key {
	k := keys.Key{
		Hash:    hash,
		Alias:   getString(item, attrAlias),
		TeamID:  getString(item, attrTeamID),
		UserID:  getString(item, attrUserID),
		Models:  getList(item, attrModels),
		Blocked: getBool(item, attrBlocked),
		Budget:  decodeBudget(item),
	}
	k.RPMLimit, _ = getInt(item, attrRPM)
	k.TPMLimit, _ = getInt(item, attrTPM)
	if ms, ok := getInt(item, attrExpires); ok {
		k.ExpiresAt = time.UnixMilli(ms).UTC()
	}
	if ms, ok := getInt(item, attrCreated); ok {
		k.CreatedAt = time.UnixMilli(ms).UTC()
	}
	decodeKeyAdmin(item, &k)
	return k
}

func decodeTeam(id string, item map[string]types.AttributeValue) keys.Team {
	t := keys.Team{
		ID:      id,
		Alias:   getString(item, attrAlias),
		Models:  getList(item, attrModels),
		Blocked: getBool(item, attrBlocked),
		Budget:  decodeBudget(item),
	}
	t.RPMLimit, _ = getInt(item, attrRPM)
	t.TPMLimit, _ = getInt(item, attrTPM)
	if ms, ok := getInt(item, attrCreated); ok {
		t.CreatedAt = time.UnixMilli(ms).UTC()
	}
	decodeTeamAdmin(item, &t)
	return t
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func f(v float64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(v, 'f', -1, 64)}
}

func list(vs []string) types.AttributeValue {
	l := make([]types.AttributeValue, len(vs))
	for i, v := range vs {
		l[i] = s(v)
	}
	return &types.AttributeValueMemberL{Value: l}
}

func getString(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getBool(item map[string]types.AttributeValue, name string) bool {
	v, ok := item[name].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

func getInt(item map[string]types.AttributeValue, name string) (int64, bool) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(v.Value, 10, 64)
	return i, err == nil
}

func getFloatOK(item map[string]types.AttributeValue, name string) (float64, bool) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseFloat(v.Value, 64)
	return x, err == nil
}

func getList(item map[string]types.AttributeValue, name string) []string {
	v, ok := item[name].(*types.AttributeValueMemberL)
	if !ok || len(v.Value) == 0 {
		return nil
	}
	out := make([]string, 0, len(v.Value))
	for _, e := range v.Value {
		if sv, ok := e.(*types.AttributeValueMemberS); ok {
			out = append(out, sv.Value)
		}
	}
	return out
}
