package ddblimits

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/limits"
)

// Lease items (max_parallel_requests, see limits/parallel.go), on the
// counters table:
//
//	pk "par#<kind>#<id>"   n (N: leases held), "l:<lease id>" (N: its expiry, unix ms) per lease, expires_at (N)
//
// The admission, in the same UpdateItem or TransactWriteItems as the
// counters:
//
//	SET #lease = :lexp, expires_at = :ttl ADD n :one
//	IF attribute_not_exists(n) OR n < :cap
//
// and, when a refusal showed expired leases, removing them in the same
// write: REMOVE #r0, ... ADD n :(1-k) IF (n < :cap+k) AND #r0 = :v0 AND ...
// Release: ADD n :minus1 REMOVE #lease IF attribute_exists(#lease).
//
// The item holds one entry per request in flight (about 45 bytes with a
// gateway call id), so its writes cost ceil(size / 1 KB) units: 1 up to
// about 20 requests in flight, 2 per unit in a transaction.

// LeaseTTL is how long after its last lease's expiry a lease item may be
// deleted by TTL.
const LeaseTTL = 24 * time.Hour

// LeasePK returns the partition key of a scope's lease item.
func LeasePK(kind limits.Kind, id string) string { return "par#" + string(kind) + "#" + id }

const leasePrefix = "l:"

// leaseUpdate returns the conditional lease update of item it.
func leaseUpdate(table string, p *limits.Plan, it limits.Item) *types.Update {
	exp := p.Req.LeaseExpires
	k := int64(len(it.Reap))
	names := map[string]string{"#lease": leasePrefix + p.Req.Lease}
	values := ddb.Item{
		":d":    ddb.N(1 - k),
		":cap":  ddb.N(it.ParCap + k),
		":lexp": ddb.N(exp.UnixMilli()),
		":ttl":  ddb.N(exp.Add(LeaseTTL).Unix()),
	}
	cond := "(attribute_not_exists(n) OR n < :cap)"
	expr := "SET #lease = :lexp, expires_at = :ttl ADD n :d"
	var remove []string
	for i, r := range it.Reap {
		n, v := "#r"+strconv.Itoa(i), ":r"+strconv.Itoa(i)
		names[n], values[v] = leasePrefix+r.ID, ddb.N(r.Expires)
		cond += " AND " + n + " = " + v
		remove = append(remove, n)
	}
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	return &types.Update{
		TableName:                           aws.String(table),
		Key:                                 ddb.PK(LeasePK(it.Slot.Kind, it.Slot.ID)),
		UpdateExpression:                    aws.String(expr),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// leaseBlocked reads a refused lease item: its expired leases, which the
// admitter reaps in another attempt, or, when it had room after all (it
// changed since), a plain retry.
func leaseBlocked(p *limits.Plan, i int, old ddb.Item) limits.Outcome {
	out := limits.BlockedByItem(i, limits.ReasonParallel)
	var live int64
	for name, v := range old {
		id, ok := strings.CutPrefix(name, leasePrefix)
		if !ok {
			continue
		}
		n, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			continue
		}
		exp, err := strconv.ParseInt(n.Value, 10, 64)
		if err == nil && limits.LeaseExpired(exp, p.Req.Now) {
			out.Stale = append(out.Stale, limits.StaleLease{ID: id, Expires: exp})
			if len(out.Stale) == maxReap {
				break
			}
			continue
		}
		live++
	}
	out.Retry = len(out.Stale) == 0 && old != nil && live < p.Items[i].ParCap
	return out
}

// maxReap bounds the expired leases one write removes (an expression's
// size is bounded).
const maxReap = 50

// Release implements limits.Store: one unconditional-in-effect UpdateItem
// per leased scope, concurrently.
func (s *Store) Release(ctx context.Context, a limits.Admission) error {
	if len(a.Leased) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	errs := make([]error, len(a.Leased))
	var wg sync.WaitGroup
	for i, slot := range a.Leased {
		wg.Go(func() {
			_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(s.table),
				Key:                       ddb.PK(LeasePK(slot.Kind, slot.ID)),
				UpdateExpression:          aws.String("ADD n :m REMOVE #lease"),
				ConditionExpression:       aws.String("attribute_exists(#lease)"),
				ExpressionAttributeNames:  map[string]string{"#lease": leasePrefix + a.Lease},
				ExpressionAttributeValues: ddb.Item{":m": ddb.N(-1)},
			})
			var ccf *types.ConditionalCheckFailedException
			if err != nil && !errors.As(err, &ccf) { // gone: released or reaped already
				errs[i] = fmt.Errorf("release lease of %s %s: %w", slot.Kind, slot.ID, unavailable(err))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// InFlight returns the leases of a scope in force at now (a strongly
// consistent read; for tests and tools).
func (s *Store) InFlight(ctx context.Context, kind limits.Kind, id string, now time.Time) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: ddb.PK(LeasePK(kind, id)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("read lease item: %w", err)
	}
	var live int64
	for name, v := range out.Item {
		if n, ok := v.(*types.AttributeValueMemberN); ok && strings.HasPrefix(name, leasePrefix) {
			if exp, err := strconv.ParseInt(n.Value, 10, 64); err == nil && !limits.LeaseExpired(exp, now) {
				live++
			}
		}
	}
	return live, nil
}
