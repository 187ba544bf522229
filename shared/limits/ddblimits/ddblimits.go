// Package ddblimits is the DynamoDB implementation of limits.Store, on the
// COUNTERS_TABLE (infra/tables.Counters), with strict budgets' holds on the
// spend table.
//
// # Items
//
//	pk "rl#<kind>#<id>#<window start, unix s>#<shard>"   req (N), tok (N), expires_at (N, unix s)
//
// The window is part of the key, so a new minute starts at a new item with
// no reset; an old item is never read again, and TTL (expires_at, two
// minutes after the window ends) only tidies up. Parallel-request leases
// have their own item per scope (parallel.go), updated in the same call.
//
// # One round trip
//
// An admission is one call:
//
//   - one scope, no hold: UpdateItem
//     ADD req :1, tok :est SET expires_at = :exp
//     IF (attribute_not_exists(req) OR req < :rpm) AND (attribute_not_exists(tok) OR tok <= :tpm - :est)
//     with ReturnValuesOnConditionCheckFailure ALL_OLD, which tells RPM from TPM;
//   - otherwise: one TransactWriteItems holding the Update above per scope
//     and, with a hold, its budget counters and hold item. If any condition
//     fails nothing is written; the cancellation reasons (with ALL_OLD items)
//     name the scope or budget that blocked.
//
// A transaction cancelled only by TransactionConflict (another transaction
// on the same item at the same moment) is retried with jittered backoff
// until the call's deadline. The TPM correction after the call is one
// unconditional UpdateItem ADD per TPM-limited counter, issued concurrently.
//
// # Ceilings
//
// One item takes about 1,000 write units per second. A transactional
// write costs 2 units, the TPM correction 1, so one counter item carries
// about 333 requests/s (20,000 RPM); the deployment and model-group scopes,
// which every request to that model touches, meet it first. Above
// limits.RPMPerShard (10,000 RPM) give the scope Shards (limits.ShardsFor):
// each shard is its own item with an even share of the limits; a request
// picks one at random and, if that one is full, tries one other. Transaction
// conflicts on a hot item also fall with sharding.
//
// An RPM-only scope whose item is throttled turns hot for its window
// (limits/hot.go): Switch records it in the item (hot, hb), every cold
// update's condition includes attribute_not_exists(hot), and Take takes
// blocks of requests from its shards. A strict budget's counter turns hot
// the same way, for its period (hotbudget.go, limits/hot_budget.go).
package ddblimits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/limits"
)

// Options configure a Store.
type Options struct {
	// HoldsTable is the spend table, where strict-budget holds are put
	// (limits.HoldKey); required for admissions with a Hold.
	HoldsTable string
	// Timeout bounds each AdjustTokens and read, on top of the caller's
	// deadline; 0: 2s.
	Timeout time.Duration
	// AdmitTimeout is the longest an Admit waits for DynamoDB when the
	// request's deadline allows more (limits.Admitter.Timeout): past it the
	// fail-open/closed policy decides. 0: the larger of Timeout and
	// limits.DefaultAdmitTimeout.
	AdmitTimeout time.Duration
	// Logger receives the fail-open lines; nil: slog.Default().
	Logger *slog.Logger
	// ItemWrites is the write units a second one item takes (DynamoDB's
	// partition ceiling, about 1,000; scaled down in tests); 0: 1,000. It
	// sets which scopes are hot (limits.HotRPM, hot.go).
	ItemWrites float64
	// OnThrottle, if set, is called for each admission write DynamoDB
	// throttled (the throttle metric).
	OnThrottle func()
}

// Store is a limits.Store on DynamoDB.
type Store struct {
	client     *dynamodb.Client
	table      string
	holds      string
	timeout    time.Duration
	admitter   limits.Admitter
	onThrottle func()
}

var _ limits.Store = (*Store)(nil)

// New returns a Store on the counters table named table (build client with
// ddb.NewClient).
func New(client *dynamodb.Client, table string, o Options) *Store {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.AdmitTimeout <= 0 {
		o.AdmitTimeout = max(o.Timeout, limits.DefaultAdmitTimeout)
	}
	s := &Store{client: client, table: table, holds: o.HoldsTable, timeout: o.Timeout}
	s.onThrottle = func() { s.admitter.CountThrottle() }
	if o.ItemWrites <= 0 {
		o.ItemWrites = limits.WriteCeiling
	}
	s.admitter = limits.Admitter{Backend: backend{s}, Logger: o.Logger, Timeout: o.AdmitTimeout, ItemWrites: o.ItemWrites, OnThrottle: o.OnThrottle}
	return s
}

// Admit implements limits.Store.
func (s *Store) Admit(ctx context.Context, req limits.AdmitRequest) (limits.Decision, error) {
	if req.Hold != nil && s.holds == "" {
		return limits.Decision{}, fmt.Errorf("%w: holds need Options.HoldsTable", limits.ErrInvalid)
	}
	return s.admitter.Admit(ctx, req)
}

// FailedOpen returns how many requests this store admitted uncounted
// because DynamoDB could not answer (the fail-open metric).
func (s *Store) FailedOpen() int64 { return s.admitter.FailedOpen() }

// Throttled returns how many admission writes DynamoDB throttled.
func (s *Store) Throttled() int64 { return s.admitter.Throttled() }

// Counted returns the requests counted in every shard of a scope in the
// window holding now (strongly consistent reads; for tests and tools).
func (s *Store) Counted(ctx context.Context, kind limits.Kind, id string, now time.Time) (int64, error) {
	var n int64
	for shard := range limits.MaxShards {
		req, _, err := s.Count(ctx, kind, id, shard, now)
		if err != nil {
			return 0, err
		}
		n += req
	}
	return n, nil
}

// PK returns the partition key of a counter item.
func PK(slot limits.Slot, window time.Time) string {
	return "rl#" + string(slot.Kind) + "#" + slot.ID + "#" + strconv.FormatInt(window.Unix(), 10) + "#" + strconv.Itoa(slot.Shard)
}

// Count returns the requests and tokens counted in a scope's shard in the
// window holding now (a strongly consistent read; for tests and tools).
func (s *Store) Count(ctx context.Context, kind limits.Kind, id string, shard int, now time.Time) (requests, tokens int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            ddb.PK(PK(limits.Slot{Kind: kind, ID: id, Shard: shard}, limits.WindowStart(now))),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, 0, fmt.Errorf("read counter: %w", err)
	}
	return ddb.Int0(out.Item, "req"), ddb.Int0(out.Item, "tok"), nil
}

// update returns the conditional update of one item: a counter's, or a
// lease item's (parallel.go).
func update(table string, p *limits.Plan, it limits.Item) *types.Update {
	if it.Lease {
		return leaseUpdate(table, p, it)
	}
	values := ddb.Item{
		":one": ddb.N(1),
		":est": ddb.N(p.Req.Tokens),
		":exp": ddb.N(p.Expires.Unix()),
	}
	// A scope turned hot (limits/hot.go) is no longer counted here alone.
	cond := "attribute_not_exists(hot)"
	if it.RPMCap > 0 {
		cond += " AND (attribute_not_exists(req) OR req < :rpm)"
		values[":rpm"] = ddb.N(it.RPMCap)
	}
	if it.TPMCap > 0 {
		cond += " AND (attribute_not_exists(tok) OR tok <= :tmax)"
		values[":tmax"] = ddb.N(it.TPMCap - p.Req.Tokens)
	}
	return &types.Update{
		TableName:                           aws.String(table),
		Key:                                 ddb.PK(PK(it.Slot, p.Window)),
		UpdateExpression:                    aws.String("ADD req :one, tok :est SET expires_at = :exp"),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// itemBlocked names why item i's old values left no room.
func itemBlocked(p *limits.Plan, i int, old ddb.Item) limits.Outcome {
	if p.Items[i].Lease {
		return leaseBlocked(p, i, old)
	}
	if n, ok := ddb.Int(old, "hot"); ok && n > 0 {
		out := limits.BlockedByItem(i, limits.ReasonRPM)
		out.HotShards, out.HotBase = int(n), ddb.Int0(old, "hb")
		return out
	}
	r := p.Items[i].RoomFor(ddb.Int0(old, "req"), ddb.Int0(old, "tok"), p.Req.Tokens)
	if r == "" {
		r = limits.ReasonRPM // changed since; report the request limit
	}
	return limits.BlockedByItem(i, r)
}

func unavailable(err error) error {
	if ddb.Throttled(err) {
		return fmt.Errorf("%w: %w", limits.ErrThrottled, err)
	}
	if ddb.Unavailable(err) {
		return fmt.Errorf("%w: %w", limits.ErrUnavailable, err)
	}
	return err
}

type backend struct{ s *Store }

// noRetry makes a call one attempt: a hot scope's block write retries
// throttling itself, on another shard.
func noRetry(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// Switch implements limits.Taker: SET hot = :n, base = req IF
// attribute_not_exists(hot) on the scope's counter item (shard 0).
func (b backend) Switch(ctx context.Context, slot limits.Slot, window, expires time.Time, shards int) (int, int64, error) {
	return b.s.turnHot(ctx, PK(slot, window), "hot = :n, hb = if_not_exists(req, :zero), expires_at = :exp",
		ddb.Item{":n": ddb.N(int64(shards)), ":zero": ddb.N(0), ":exp": ddb.N(expires.Unix())})
}

// turnHot runs SET <set> IF attribute_not_exists(hot) on item pk (values
// holding :n, the shards) and returns the item's hot and hb: its shards
// and base, whether this write or an earlier one turned it hot.
func (s *Store) turnHot(ctx context.Context, pk, set string, values ddb.Item) (int, int64, error) {
	item, err := s.switchItem(ctx, pk, "SET "+set, values)
	if err != nil {
		return 0, 0, fmt.Errorf("turn %s hot: %w", pk, err)
	}
	n, base := ddb.Int0(item, "hot"), ddb.Int0(item, "hb")
	if n < 1 || n > limits.MaxShards {
		return 0, 0, fmt.Errorf("turn %s hot: the item says %d shards", pk, n)
	}
	return int(n), base, nil
}

// switchItem makes the switch update of the item key IF
// attribute_not_exists(hot), and returns the item as it is after it, or
// as the refusal found it (hot already).
func (s *Store) switchItem(ctx context.Context, key, update string, values ddb.Item) (ddb.Item, error) {
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 ddb.PK(key),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String("attribute_not_exists(hot)"),
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, noRetry)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return ccf.Item, nil
	case err != nil:
		return nil, unavailable(err)
	}
	return out.Attributes, nil
}

// Take implements limits.Taker: ADD req :n IF req <= cap - n.
func (b backend) Take(ctx context.Context, slot limits.Slot, window, expires time.Time, cap, n int64) (taken, counted int64, err error) {
	s := b.s
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 ddb.PK(PK(slot, window)),
		UpdateExpression:                    aws.String("ADD req :n SET expires_at = :exp"),
		ConditionExpression:                 aws.String("attribute_not_exists(req) OR req <= :lim"),
		ExpressionAttributeValues:           ddb.Item{":n": ddb.N(n), ":lim": ddb.N(cap - n), ":exp": ddb.N(expires.Unix())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, noRetry)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return 0, ddb.Int0(ccf.Item, "req"), nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("take %d of %s %s shard %d: %w", n, slot.Kind, slot.ID, slot.Shard, unavailable(err))
	}
	return n, 0, nil
}

func (b backend) Attempt(ctx context.Context, p *limits.Plan) (limits.Outcome, error) {
	s := b.s
	if len(p.Items) == 1 && p.Req.Hold == nil {
		u := update(s.table, p, p.Items[0])
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           u.TableName,
			Key:                                 u.Key,
			UpdateExpression:                    u.UpdateExpression,
			ConditionExpression:                 u.ConditionExpression,
			ExpressionAttributeNames:            u.ExpressionAttributeNames,
			ExpressionAttributeValues:           u.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: u.ReturnValuesOnConditionCheckFailure,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return itemBlocked(p, 0, ccf.Item), nil
		}
		if err != nil {
			if ddb.Throttled(err) {
				s.onThrottle()
			}
			return limits.Outcome{}, fmt.Errorf("admit: %w", unavailable(err))
		}
		return limits.AllowedOutcome, nil
	}

	items := make([]types.TransactWriteItem, 0, len(p.Items))
	for _, it := range p.Items {
		items = append(items, types.TransactWriteItem{Update: update(s.table, p, it)})
	}
	nBudgets := 0
	if h := p.Req.Hold; h != nil {
		nBudgets = len(h.Budgets)
		items = append(items, holdItems(s.table, s.holds, h)...)
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	for attempt := 0; ; attempt++ {
		_, err := s.client.TransactWriteItems(ctx, in)
		if err == nil {
			return limits.AllowedOutcome, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return limits.Outcome{}, fmt.Errorf("admit: %w", unavailable(err))
		}
		conflict := false
		var throttled *limits.HoldThrottled
		for i, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				if j := i - len(p.Items); j >= 0 && j < nBudgets {
					return budgetBlocked(p.Req.Hold, j, r.Item), nil
				}
				if i >= len(p.Items) {
					return limits.Outcome{}, fmt.Errorf("admit: hold refused: %w", err)
				}
				return itemBlocked(p, i, r.Item), nil
			case "TransactionConflict":
				conflict = true
			case "", "None":
			case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				if throttled == nil {
					throttled = &limits.HoldThrottled{Err: err}
				}
				if j := i - len(p.Items); j >= 0 && j < nBudgets {
					throttled.Budgets = append(throttled.Budgets, j)
				} else {
					throttled.Others = true
				}
			default:
				return limits.Outcome{}, fmt.Errorf("admit: %w", err)
			}
		}
		if throttled != nil {
			// The admitter turns the scopes and budgets hot or backs off
			// (limits/hot.go, limits/hot_budget.go).
			s.onThrottle()
			return limits.Outcome{}, fmt.Errorf("admit: %w", throttled)
		}
		if !conflict {
			return limits.Outcome{}, fmt.Errorf("admit: %w", err)
		}
		backoff := time.Duration(rand.Int64N(int64(min(5*time.Millisecond<<min(attempt, 5), 100*time.Millisecond)) + 1))
		select {
		case <-ctx.Done():
			return limits.Outcome{}, fmt.Errorf("admit: %w: transaction conflicts until the deadline: %w", limits.ErrUnavailable, ctx.Err())
		case <-time.After(backoff):
		}
	}
}

// AdjustTokens implements limits.Store.
func (s *Store) AdjustTokens(ctx context.Context, a limits.Admission, delta int64) error {
	if delta == 0 || len(a.Slots) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	exp := a.Window.Add(time.Minute + limits.CounterTTL).Unix()
	errs := make([]error, len(a.Slots))
	var wg sync.WaitGroup
	for i, slot := range a.Slots {
		wg.Go(func() {
			_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(s.table),
				Key:                       ddb.PK(PK(slot, a.Window)),
				UpdateExpression:          aws.String("ADD tok :d SET expires_at = :exp"),
				ExpressionAttributeValues: ddb.Item{":d": ddb.N(delta), ":exp": ddb.N(exp)},
			})
			if err != nil {
				errs[i] = fmt.Errorf("adjust tokens of %s %s: %w", slot.Kind, slot.ID, unavailable(err))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Strict-budget items (see limits.Hold):
//
//	counters table  pk "bud#<kind>#<id>#<period start, unix s>"   c (N, nano-USD), expires_at (a day after the period ends)
//	spend table     pk "hold#<shard>"  sk "<expiry, unix ms>#<request id>"   amt (N, nano-USD), cs (L of counter names)
//
// The admission adds the hold's amount to each counter with
//
//	SET c = if_not_exists(c, :base) + :r   IF attribute_not_exists(c) OR c <= :max - :r
//
// (the caller checked :base + :r <= :max) and puts the hold, in the same
// TransactWriteItems as the rate-limit counters: no extra round trip.

// BudgetTTL is how long after its period ends a budget counter may be
// deleted by TTL: long after the last hold of the period is settled.
const BudgetTTL = 24 * time.Hour

// holdItems are the counter updates and the hold put of h.
func holdItems(counters, holds string, h *limits.Hold) []types.TransactWriteItem {
	out := make([]types.TransactWriteItem, 0, len(h.Budgets)+1)
	names := h.Counters()
	for i, b := range h.Budgets {
		name := names[i]
		values := ddb.Item{
			":base": ddb.N(b.Base), ":r": ddb.N(h.Amount), ":lim": ddb.N(b.Max - h.Amount),
		}
		expr := "SET c = if_not_exists(c, :base) + :r"
		if !b.End.IsZero() {
			expr += ", expires_at = :exp"
			values[":exp"] = ddb.N(b.End.Add(BudgetTTL).Unix())
		}
		// A counter turned hot (limits/hot_budget.go) is no longer
		// reserved on alone; a hot one's shard has its own cap.
		cond := "attribute_not_exists(hot) AND (attribute_not_exists(c) OR c <= :lim)"
		switch {
		case b.Shards > 0 && b.Shard == 0:
			cond = "attribute_exists(hot) AND c <= :lim"
			values[":lim"] = ddb.N(b.Cap - h.Amount)
		case b.Shards > 0:
			cond = "attribute_not_exists(c) OR c <= :lim"
			values[":lim"], values[":base"] = ddb.N(b.Cap-h.Amount), ddb.N(0)
		}
		out = append(out, types.TransactWriteItem{Update: &types.Update{
			TableName:                           aws.String(counters),
			Key:                                 ddb.PK(name),
			UpdateExpression:                    aws.String(expr),
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	}
	out = append(out, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(holds), Item: holdItem(h, names)}})
	return out
}

// holdItem is h's item in the spend table, with its counter names built once.
func holdItem(h *limits.Hold, counters []string) ddb.Item {
	pk, sk := limits.HoldKey(h.ID, h.Expires)
	return ddb.Item{"pk": ddb.S(pk), "sk": ddb.S(sk), "amt": ddb.N(h.Amount), "cs": ddb.List(counters)}
}

// ReadHoldItem reads what the sweeper gives back from a hold's item: its
// amount and its counters.
func ReadHoldItem(it ddb.Item) (amount int64, counters []string) {
	return ddb.Int0(it, "amt"), ddb.Strings(it, "cs")
}

// BudgetAdd adds delta to a budget counter, unconditionally: a hold
// settled (real cost - reserved) or released (-reserved), in the
// transaction that deletes the hold.
func BudgetAdd(counters, counter string, delta int64) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(counters),
		Key:                       ddb.PK(counter),
		UpdateExpression:          aws.String("ADD c :d"),
		ExpressionAttributeValues: ddb.Item{":d": ddb.N(delta)},
	}}
}

// Committed returns a budget counter's value and whether it exists (a
// strongly consistent read; for tests and tools).
func (s *Store) Committed(ctx context.Context, counter string) (int64, bool, error) {
	c, ok, _, err := s.committed(ctx, counter)
	if err != nil {
		return 0, false, fmt.Errorf("read budget counter: %w", err)
	}
	return c, ok, nil
}

// committed reads a counter item: its value, whether it exists, and its
// shards when it is hot (hotbudget.go).
func (s *Store) committed(ctx context.Context, counter string) (c int64, ok bool, shards int, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: ddb.PK(counter), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, false, 0, err
	}
	_, ok = out.Item["c"]
	return ddb.Int0(out.Item, "c"), ok, int(ddb.Int0(out.Item, "hot")), nil
}
