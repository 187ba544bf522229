// Package ddbcooldown is the DynamoDB implementation of cooldown.Store, on
// the COUNTERS_TABLE (infra/tables.Counters).
//
// One item per deployment:
//
//	pk "cd#<deployment>"   until (N, unix ms): end of its cooldown
//	                       w_<class> (N, unix ms): the failure window counted for class
//	                       n_<class> (N): failures of class in that window
//
// A failure is one conditional UpdateItem returning ALL_NEW:
//
//	SET n_c = n_c + 1                IF w_c = :window       (same window)
//	SET w_c = :window, n_c = 1       IF attribute_not_exists(w_c) OR w_c < :window   (new window)
//
// (the second only when the first fails; a failure from a window older than
// the one counted is not counted). When the count passes Allowed, or the
// failure is Immediate, a second write starts the cooldown without ever
// shortening one:
//
//	SET until = :until   IF attribute_not_exists(until) OR until < :until
//
// Expiry is read, not deleted: CoolingDown compares until with now. The item
// has no TTL (one small item per deployment; deleting it while a cooldown
// runs would end the cooldown).
package ddbcooldown

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/ddb"
)

// Options tune a Store.
type Options = ddb.Options

// Store is a cooldown.Store on DynamoDB.
type Store struct{ ddb.Table }

var _ cooldown.Store = (*Store)(nil)

// New returns a Store on the counters table named table (build client with
// ddb.NewClient).
func New(client *dynamodb.Client, table string, o Options) *Store {
	return &Store{o.Table(client, table)}
}

// PK returns the partition key of a deployment's item.
func PK(deployment string) string { return "cd#" + deployment }

func key(deployment string) ddb.Item { return ddb.PK(PK(deployment)) }

func untilOf(item ddb.Item) time.Time {
	if ms, ok := ddb.Int(item, "until"); ok {
		return time.UnixMilli(ms).UTC()
	}
	return time.Time{}
}

// update runs one conditional update returning ALL_NEW, or ALL_OLD and
// false when the condition fails.
func (s *Store) update(ctx context.Context, in *dynamodb.UpdateItemInput) (ddb.Item, bool, error) {
	in.TableName = aws.String(s.Name)
	in.ReturnValues = types.ReturnValueAllNew
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	out, err := s.Client.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return out.Attributes, true, nil
}

// RecordFailure implements cooldown.Store.
func (s *Store) RecordFailure(ctx context.Context, f cooldown.Failure) (time.Time, error) {
	if err := cooldown.Validate(f); err != nil {
		return time.Time{}, err
	}
	ctx, cancel := s.Call(ctx)
	defer cancel()
	cool := f.Immediate
	var until time.Time
	if !f.Immediate {
		n, u, err := s.count(ctx, f)
		if err != nil {
			return time.Time{}, fmt.Errorf("record failure of %s: %w", f.Deployment, err)
		}
		cool, until = n > f.Allowed, u
	}
	if cool {
		want := cooldown.Until(f)
		item, _, err := s.update(ctx, &dynamodb.UpdateItemInput{
			Key:                       key(f.Deployment),
			UpdateExpression:          aws.String("SET #u = :u"),
			ConditionExpression:       aws.String("attribute_not_exists(#u) OR #u < :u"),
			ExpressionAttributeNames:  map[string]string{"#u": "until"},
			ExpressionAttributeValues: ddb.Item{":u": ddb.N(want.UnixMilli())},
		})
		if err != nil {
			return time.Time{}, fmt.Errorf("cool down %s: %w", f.Deployment, err)
		}
		until = untilOf(item)
	}
	if until.After(f.At) {
		return until, nil
	}
	return time.Time{}, nil
}

// count adds f to its class's window count and returns the count (0 when f
// belongs to an older window) and the deployment's cooldown end.
func (s *Store) count(ctx context.Context, f cooldown.Failure) (int, time.Time, error) {
	w := cooldown.WindowStart(f)
	names := map[string]string{"#w": "w_" + f.Class, "#n": "n_" + f.Class}
	update := func(expr, cond string) (ddb.Item, bool, error) {
		return s.update(ctx, &dynamodb.UpdateItemInput{
			Key:                       key(f.Deployment),
			UpdateExpression:          aws.String(expr),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: ddb.Item{":w": ddb.N(w), ":one": ddb.N(1)},
		})
	}
	for {
		item, ok, err := update("SET #n = #n + :one", "#w = :w")
		if err != nil {
			return 0, time.Time{}, err
		}
		if !ok {
			if old, found := ddb.Int(item, names["#w"]); found && old > w {
				return 0, untilOf(item), nil // a late failure from an older window
			}
			item, ok, err = update("SET #w = :w, #n = :one", "attribute_not_exists(#w) OR #w < :w")
			if err != nil {
				return 0, time.Time{}, err
			}
			if !ok {
				continue // another instance opened the window first: count in it
			}
		}
		n, _ := ddb.Int(item, names["#n"])
		return int(n), untilOf(item), nil
	}
}

// CoolingDown implements cooldown.Store with strongly consistent
// BatchGetItem calls of up to 100 keys.
func (s *Store) CoolingDown(ctx context.Context, ids []string, now time.Time) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(ids) == 0 {
		return out, nil
	}
	ctx, cancel := s.Call(ctx)
	defer cancel()
	seen := map[string]bool{}
	var keys []ddb.Item
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			keys = append(keys, key(id))
		}
	}
	for len(keys) > 0 {
		batch := keys[:min(100, len(keys))]
		keys = keys[len(batch):]
		req := map[string]types.KeysAndAttributes{s.Name: {
			Keys:                     batch,
			ConsistentRead:           aws.Bool(true),
			ProjectionExpression:     aws.String("pk, #u"),
			ExpressionAttributeNames: map[string]string{"#u": "until"},
		}}
		for delay := 10 * time.Millisecond; len(req) > 0; delay = min(2*delay, 200*time.Millisecond) {
			res, err := s.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, fmt.Errorf("read cooldowns: %w", err)
			}
			for _, item := range res.Responses[s.Name] {
				if u := untilOf(item); u.After(now) {
					out[strings.TrimPrefix(ddb.String(item, "pk"), "cd#")] = u
				}
			}
			req = res.UnprocessedKeys
			if len(req) == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("read cooldowns: %w", ctx.Err())
			case <-time.After(delay):
			}
		}
	}
	return out, nil
}
