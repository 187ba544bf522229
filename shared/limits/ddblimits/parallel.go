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
// A hot lease scope (limits/hot_lease.go) has shards of its own,
//
//	pk "par.<shard>#<kind>#<id>"   n, "l:<lease id>" per lease, expires_at
//
// taken and released as above; its one item (shard 0) records the switch
// (hot: the shards; expires_at removed, so the record outlives its leases)
// and keeps only the leases taken before it, and every cold admission's
// condition includes attribute_not_exists(hot).
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

// leaseSlotPK returns the partition key of a lease item: the scope's one
// item (shard 0), or a hot scope's shard.
func leaseSlotPK(slot limits.Slot) string {
	if slot.Shard == 0 {
		return LeasePK(slot.Kind, slot.ID)
	}
	return "par." + strconv.Itoa(slot.Shard) + "#" + string(slot.Kind) + "#" + slot.ID
}

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
	if it.Slot.Shard == 0 {
		cond = "attribute_not_exists(hot) AND " + cond // turned hot: counted on its shards
	}
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
		Key:                                 ddb.PK(leaseSlotPK(it.Slot)),
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
	if n, ok := ddb.Int(old, "hot"); ok && n > 0 && p.Items[i].Slot.Shard == 0 {
		out.HotShards, out.HotBase = int(n), ddb.Int0(old, "n")
		return out
	}
	live := leasesIn(old, p.Req.Now, &out.Stale)
	out.Retry = len(out.Stale) == 0 && old != nil && int64(len(live)) < p.Items[i].ParCap
	return out
}

// maxReap bounds the expired leases one write removes (an expression's
// size is bounded).
const maxReap = 50

// Release implements limits.Store: one unconditional-in-effect UpdateItem
// per leased scope, concurrently, on the shard the lease was taken on; a
// throttled one is retried with backoff until the store's timeout.
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
			err := s.admitter.RetryThrottled(ctx, func() error {
				_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
					TableName:                 aws.String(s.table),
					Key:                       ddb.PK(leaseSlotPK(slot)),
					UpdateExpression:          aws.String("ADD n :m REMOVE #lease"),
					ConditionExpression:       aws.String("attribute_exists(#lease)"),
					ExpressionAttributeNames:  map[string]string{"#lease": leasePrefix + a.Lease},
					ExpressionAttributeValues: ddb.Item{":m": ddb.N(-1)},
				}, noRetry)
				return unavailable(err)
			})
			var ccf *types.ConditionalCheckFailedException
			switch {
			case err == nil:
				s.admitter.LeaseReleased(slot)
			case !errors.As(err, &ccf): // gone: released or reaped already
				errs[i] = fmt.Errorf("release lease of %s %s: %w", slot.Kind, slot.ID, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// InFlight returns the leases of a scope in force at now, on its one
// item and, hot, its shards (strongly consistent reads; for tests and
// tools).
func (s *Store) InFlight(ctx context.Context, kind limits.Kind, id string, now time.Time) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var live int64
	shards := int64(0)
	for shard := int64(0); shard <= shards; shard++ {
		item, err := s.leaseItem(ctx, limits.Slot{Kind: kind, ID: id, Shard: int(shard)})
		if err != nil {
			return 0, err
		}
		if shard == 0 {
			shards = min(ddb.Int0(item, "hot"), limits.MaxShards)
		}
		live += int64(len(leasesIn(item, now, nil)))
	}
	return live, nil
}

// leaseItem reads a lease item (strongly consistent).
func (s *Store) leaseItem(ctx context.Context, slot limits.Slot) (ddb.Item, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: ddb.PK(leaseSlotPK(slot)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("read lease item: %w", unavailable(err))
	}
	return out.Item, nil
}

// leasesIn returns the ids of item's leases in force at now, and adds
// those expired to stale (up to maxReap) when it is not nil.
func leasesIn(item ddb.Item, now time.Time, stale *[]limits.StaleLease) []string {
	var live []string
	for name, v := range item {
		n, ok := v.(*types.AttributeValueMemberN)
		id, isLease := strings.CutPrefix(name, leasePrefix)
		if !ok || !isLease {
			continue
		}
		exp, err := strconv.ParseInt(n.Value, 10, 64)
		switch {
		case err == nil && limits.LeaseExpired(exp, now):
			if stale != nil && len(*stale) < maxReap {
				*stale = append(*stale, limits.StaleLease{ID: id, Expires: exp})
			}
		default:
			live = append(live, id)
		}
	}
	return live
}

// SwitchLeases implements limits.LeaseSharder: SET hot = :n REMOVE
// expires_at IF attribute_not_exists(hot) on the scope's lease item.
func (b backend) SwitchLeases(ctx context.Context, slot limits.Slot, shards int) (int, int64, error) {
	item, err := b.s.switchItem(ctx, LeasePK(slot.Kind, slot.ID), "SET hot = :n REMOVE expires_at", ddb.Item{":n": ddb.N(int64(shards))})
	if err != nil {
		return 0, 0, fmt.Errorf("turn leases of %s %s hot: %w", slot.Kind, slot.ID, err)
	}
	n := ddb.Int0(item, "hot")
	if n < 2 || n > limits.MaxShards {
		return 0, 0, fmt.Errorf("turn leases of %s %s hot: the item says %d shards", slot.Kind, slot.ID, n)
	}
	return int(n), ddb.Int0(item, "n"), nil
}

// LeaseShards returns the shards a scope's leases are split over (0: its
// one lease item; a strongly consistent read, for tests and tools).
func (s *Store) LeaseShards(ctx context.Context, kind limits.Kind, id string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	item, err := s.leaseItem(ctx, limits.Slot{Kind: kind, ID: id})
	return int(ddb.Int0(item, "hot")), err
}

// ReadLeases implements limits.LeaseSharder: one strongly consistent
// BatchGetItem of the scope's lease item and its shards (no write unit).
func (b backend) ReadLeases(ctx context.Context, slot limits.Slot, shards int, now time.Time) (int64, []int64, error) {
	s := b.s
	keys := make([]map[string]types.AttributeValue, 0, shards+1)
	for shard := range shards + 1 {
		keys = append(keys, ddb.PK(leaseSlotPK(limits.Slot{Kind: slot.Kind, ID: slot.ID, Shard: shard})))
	}
	out, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
		RequestItems: map[string]types.KeysAndAttributes{s.table: {Keys: keys, ConsistentRead: aws.Bool(true)}},
	})
	if err != nil {
		return 0, nil, fmt.Errorf("read leases of %s %s: %w", slot.Kind, slot.ID, unavailable(err))
	}
	live := make([]int64, shards)
	for i := range live {
		live[i] = -1 // unprocessed: not read
	}
	legacy := int64(-1)
	for _, item := range out.Responses[s.table] {
		n := int64(len(leasesIn(item, now, nil)))
		pk := ddb.String(item, "pk")
		if pk == LeasePK(slot.Kind, slot.ID) {
			legacy = n
			continue
		}
		for shard := 1; shard <= shards; shard++ {
			if pk == leaseSlotPK(limits.Slot{Kind: slot.Kind, ID: slot.ID, Shard: shard}) {
				live[shard-1] = n
				break
			}
		}
	}
	// A shard never written is not returned: it holds nothing.
	unread := map[string]bool{}
	for _, k := range out.UnprocessedKeys[s.table].Keys {
		unread[ddb.String(k, "pk")] = true
	}
	for shard := 1; shard <= shards; shard++ {
		if live[shard-1] < 0 && !unread[leaseSlotPK(limits.Slot{Kind: slot.Kind, ID: slot.ID, Shard: shard})] {
			live[shard-1] = 0
		}
	}
	if legacy < 0 {
		if unread[LeasePK(slot.Kind, slot.ID)] {
			return 0, nil, fmt.Errorf("read leases of %s %s: %w: the lease item was not read", slot.Kind, slot.ID, limits.ErrUnavailable)
		}
		legacy = 0
	}
	return legacy, live, nil
}
