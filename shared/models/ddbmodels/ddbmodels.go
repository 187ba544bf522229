// Package ddbmodels is the DynamoDB implementation of models.Store, on the
// KEYS_TABLE (infra/tables.Keys), beside the records the admin API writes:
//
//	pk "model#<id>"    kind "model", name (S), p (S: litellm_params JSON,
//	                   secrets sealed), i (S: model_info JSON), rev (N),
//	                   created_at/updated_at (N, unix ms), created_by/updated_by
//	pk "meta#models"   v (N): the version, ADDed by every write;
//	                   ids (SS): the stored ids
//
// Every write is one TransactWriteItems of the record and meta#models, so
// the version moves exactly with the records, and an instance learns
// whether anything changed from one small GetItem. List reads meta#models,
// then the ids' items with BatchGetItem (strongly consistent): no Scan of
// the keys.
package ddbmodels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/models"
)

// Options tune a Store.
type Options = ddb.Options

// Store is a models.Store on DynamoDB.
type Store struct{ ddb.Table }

var _ models.Store = (*Store)(nil)

// New returns a Store on the keys table named table.
func New(client *dynamodb.Client, table string, o Options) *Store {
	return &Store{o.Table(client, table)}
}

// MetaPK is the version item's key.
const MetaPK = "meta#models"

// PK returns the partition key of a stored deployment's item.
func PK(id string) string { return "model#" + id }

// storeErr puts a DynamoDB error in the store-error vocabulary.
func storeErr(op string, err error) error {
	if ddb.Unavailable(err) {
		return fmt.Errorf("models %s: %w: %w", op, apierr.ErrUnavailable, err)
	}
	return fmt.Errorf("models %s: %w", op, err)
}

// Version implements models.Store.
func (s *Store) Version(ctx context.Context) (int64, error) {
	v, _, err := s.meta(ctx)
	return v, err
}

func (s *Store) meta(ctx context.Context) (int64, []string, error) {
	ctx, cancel := s.Call(ctx)
	defer cancel()
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Name, Key: ddb.PK(MetaPK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, nil, storeErr("version", err)
	}
	return ddb.Int0(out.Item, "v"), stringSet(out.Item, "ids"), nil
}

func stringSet(it ddb.Item, name string) []string {
	if ss, ok := it[name].(*types.AttributeValueMemberSS); ok {
		return ss.Value
	}
	return nil
}

// List implements models.Store.
func (s *Store) List(ctx context.Context) ([]models.Record, int64, error) {
	v, ids, err := s.meta(ctx)
	if err != nil {
		return nil, 0, err
	}
	var out []models.Record
	for chunk := range slices.Chunk(ids, 100) {
		keys := make([]map[string]types.AttributeValue, len(chunk))
		for i, id := range chunk {
			keys[i] = ddb.PK(PK(id))
		}
		for len(keys) > 0 {
			cctx, cancel := s.Call(ctx)
			res, err := s.Client.BatchGetItem(cctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				s.Name: {Keys: keys, ConsistentRead: aws.Bool(true)}}})
			cancel()
			if err != nil {
				return nil, 0, storeErr("list", err)
			}
			for _, it := range res.Responses[s.Name] {
				r, err := decode(it)
				if err != nil {
					return nil, 0, err
				}
				out = append(out, r)
			}
			keys = res.UnprocessedKeys[s.Name].Keys
		}
	}
	slices.SortFunc(out, func(a, b models.Record) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, v, nil
}

// Get implements models.Store.
func (s *Store) Get(ctx context.Context, id string) (models.Record, error) {
	ctx, cancel := s.Call(ctx)
	defer cancel()
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Name, Key: ddb.PK(PK(id)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return models.Record{}, storeErr("get", err)
	}
	if out.Item == nil {
		return models.Record{}, models.ErrNotFound
	}
	return decode(out.Item)
}

// Create implements models.Store.
func (s *Store) Create(ctx context.Context, r models.Record) error {
	r.Rev = 1
	item, err := encode(r)
	if err != nil {
		return err
	}
	return s.write(ctx, "create", types.TransactWriteItem{Put: &types.Put{TableName: &s.Name, Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")}}, "ADD v :one, ids :id", r.ID, models.ErrExists)
}

// Update implements models.Store.
func (s *Store) Update(ctx context.Context, r models.Record) error {
	rev := r.Rev
	r.Rev++
	item, err := encode(r)
	if err != nil {
		return err
	}
	return s.write(ctx, "update", types.TransactWriteItem{Put: &types.Put{TableName: &s.Name, Item: item,
		ConditionExpression:       aws.String("attribute_exists(pk) AND rev = :rev"),
		ExpressionAttributeValues: ddb.Item{":rev": ddb.N(rev)}}}, "ADD v :one", r.ID, nil)
}

// Delete implements models.Store.
func (s *Store) Delete(ctx context.Context, id string, rev int64) error {
	return s.write(ctx, "delete", types.TransactWriteItem{Delete: &types.Delete{TableName: &s.Name, Key: ddb.PK(PK(id)),
		ConditionExpression:       aws.String("attribute_exists(pk) AND rev = :rev"),
		ExpressionAttributeValues: ddb.Item{":rev": ddb.N(rev)}}}, "ADD v :one DELETE ids :id", id, nil)
}

// write commits rec's write with the version's update in one transaction.
// A failed condition on the record is exists (Create) or, else, not found
// or conflict, told apart by reading the record.
func (s *Store) write(ctx context.Context, op string, rec types.TransactWriteItem, metaUpdate, id string, exists error) error {
	vals := ddb.Item{":one": ddb.N(1)}
	if op != "update" {
		vals[":id"] = &types.AttributeValueMemberSS{Value: []string{id}}
	}
	cctx, cancel := s.Call(ctx)
	_, err := s.Client.TransactWriteItems(cctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{rec,
		{Update: &types.Update{TableName: &s.Name, Key: ddb.PK(MetaPK), UpdateExpression: aws.String(metaUpdate), ExpressionAttributeValues: vals}}}})
	cancel()
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && len(tce.CancellationReasons) > 0 && aws.ToString(tce.CancellationReasons[0].Code) == "ConditionalCheckFailed" {
		if exists != nil {
			return exists
		}
		if _, gerr := s.Get(ctx, id); errors.Is(gerr, models.ErrNotFound) {
			return models.ErrNotFound
		}
		return models.ErrConflict
	}
	if err != nil {
		return storeErr(op, err)
	}
	return nil
}

func encode(r models.Record) (ddb.Item, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	p, err := json.Marshal(r.Params)
	if err != nil {
		return nil, &apierr.InvalidParam{Param: "litellm_params", Reason: err.Error()}
	}
	i, err := json.Marshal(r.Info)
	if err != nil {
		return nil, &apierr.InvalidParam{Param: "model_info", Reason: err.Error()}
	}
	if len(p)+len(i) > 300<<10 {
		return nil, &apierr.InvalidParam{Param: "litellm_params", Reason: "the deployment is larger than 300 KB of JSON"}
	}
	item := ddb.PK(PK(r.ID))
	item["kind"], item["id"], item["name"] = ddb.S("model"), ddb.S(r.ID), ddb.S(r.ModelName)
	item["p"], item["i"], item["rev"] = ddb.S(string(p)), ddb.S(string(i)), ddb.N(r.Rev)
	item["created_at"], item["updated_at"] = ddb.N(r.CreatedAt.UnixMilli()), ddb.N(r.UpdatedAt.UnixMilli())
	if r.CreatedBy != "" {
		item["created_by"] = ddb.S(r.CreatedBy)
	}
	if r.UpdatedBy != "" {
		item["updated_by"] = ddb.S(r.UpdatedBy)
	}
	return item, nil
}

func decode(it ddb.Item) (models.Record, error) {
	r := models.Record{ID: ddb.String(it, "id"), ModelName: ddb.String(it, "name"), Rev: ddb.Int0(it, "rev"),
		CreatedAt: time.UnixMilli(ddb.Int0(it, "created_at")).UTC(), UpdatedAt: time.UnixMilli(ddb.Int0(it, "updated_at")).UTC(),
		CreatedBy: ddb.String(it, "created_by"), UpdatedBy: ddb.String(it, "updated_by")}
	if err := json.Unmarshal([]byte(ddb.String(it, "p")), &r.Params); err != nil {
		return r, fmt.Errorf("models: item %s: litellm_params: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(ddb.String(it, "i")), &r.Info); err != nil {
		return r, fmt.Errorf("models: item %s: model_info: %w", r.ID, err)
	}
	return r, nil
}
