// Package ddbspend is the DynamoDB spend.Store: spend logs and daily rows
// in the SPEND_TABLE (infra/tables.Spend), spend totals on the records of
// the KEYS_TABLE (through package ddbkeys, the only code that knows their
// layout).
//
// # Items (spend table; pk, sk strings)
//
//	log     pk "log#<YYYY-MM-DD>#<s>"  sk "<request id>"
//	        one per event; the day is the event's UTC end date, s = fnv32a(request id) % 8
//	        (spreads a day's writes over 8 partitions). Short attribute names keep it
//	        well under 1 KB: v t0 t1 (start/end, epoch µs) st kh ka tm us eu mg dp pv md ab ct
//	        pt ot ht (tokens) c (cost, integer nano-USD; absent: unknown) ue na nr nf tg sm sc,
//	        expires_at (TTL: Options.LogRetention after the end)
//	daily   pk "day#<YYYY-MM-DD>"  sk "k#<key hash>#<provider>#<model group>"
//	        kh tm us mg pv (SET: the key's team and user as its events last named them),
//	        pt ot ht c rq ok fl (ADD: tokens, nano-USD, requests, successes, failures)
//	enduser pk "day#<YYYY-MM-DD>"  sk "e#<end user>"  eu, and the same counters
//
// No secondary index: a log is found by request id with one BatchGetItem
// over the retention's days (its partition follows from the id and the
// day); listings read the 8 partitions of each day in range and filter;
// reports read the day partitions of daily rows.
//
// # Exactly once
//
// Record writes a batch in TransactWriteItems of at most 100 items, each
// self-contained: the log puts of its events (condition
// attribute_not_exists(pk)) together with exactly those events' aggregated
// additions to the keys-table records (ddbkeys.SpendUpdate, conditioned on
// the period state it was computed from) and to the daily rows. A log
// exists if and only if its event's additions were applied, in the same
// transaction. A cancellation names its reasons per item: a log's
// ConditionalCheckFailed is an event recorded before (a redelivery, or a
// concurrent consumer holding the same message): it is dropped and the rest
// re-aggregated; a record's failed condition (its budget period or
// duration changed since it was read) or a conflict is retried after
// re-reading the records.
package ddbspend

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// Shards is the number of partitions a day's logs are spread over.
const Shards = 8

// MaxTransactItems is DynamoDB's limit of items in one TransactWriteItems.
const MaxTransactItems = 100

// Records is what the store needs of the keys table: ddbkeys.Store.
type Records interface {
	SpendStates(ctx context.Context, refs []keys.Ref) (map[keys.Ref]keys.RecordSpend, error)
	// FollowMoves finds the keys that the missing key refs were
	// regenerated into, reading their spend into states.
	FollowMoves(ctx context.Context, refs []keys.Ref, states map[keys.Ref]keys.RecordSpend) (map[keys.Ref]keys.Ref, error)
	MarkSoft(ctx context.Context, ref keys.Ref, mark time.Time) (bool, error)
}

// Options tune a Store.
type Options struct {
	// LogRetention is how long a spend log is kept (its TTL), and how far
	// back a request id is looked up. It must exceed the time an event can
	// spend in the queues (retention plus dead-letter redrive): a log that
	// expired cannot catch a late duplicate. 0: 90 days.
	LogRetention time.Duration
	// CountersTable is the counters table of strict-budget counters, which
	// recording an event with a hold settles (holds.go). "": holds are not
	// settled.
	CountersTable string
	// MaxItems bounds the items of one transaction (tests use fewer). 0: 100.
	MaxItems int
	Timeout  time.Duration // per call; 0: 10s
	Logger   *slog.Logger
	Now      func() time.Time
}

// Store is a spend.Store on DynamoDB.
type Store struct {
	client    *dynamodb.Client
	table     string
	keysTable string
	records   Records
	o         Options

	transactions  atomic.Int64
	transactItems atomic.Int64
	cancellations atomic.Int64
	writeMilli    atomic.Int64 // consumed write capacity units x 1000
	estimated     atomic.Int64 // write units estimated from item sizes
}

var _ spend.Store = (*Store)(nil)

// New returns a Store on the spend table named table, adding spend to the
// records of the keys table keysTable through records (a ddbkeys.Store on
// that table).
func New(client *dynamodb.Client, table, keysTable string, records Records, o Options) *Store {
	if o.LogRetention <= 0 {
		o.LogRetention = 90 * 24 * time.Hour
	}
	if o.MaxItems <= 0 || o.MaxItems > MaxTransactItems {
		o.MaxItems = MaxTransactItems
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Store{client: client, table: table, keysTable: keysTable, records: records, o: o}
}

// Stats counts the store's writes since it was made.
type Stats struct {
	Transactions  int64   // TransactWriteItems calls that committed
	TransactItems int64   // items in them
	Cancellations int64   // cancelled transactions (duplicates, conflicts, period changes)
	WriteUnits    float64 // consumed write capacity reported by DynamoDB
	// EstimatedWriteUnits is what the committed transactions cost by
	// DynamoDB's rule (2 units per item per started KB): logs by their
	// size, updated rows and records as at most 1 KB each.
	EstimatedWriteUnits int64
}

// Stats returns the counts.
func (st *Store) Stats() Stats {
	return Stats{
		Transactions: st.transactions.Load(), TransactItems: st.transactItems.Load(),
		Cancellations: st.cancellations.Load(), WriteUnits: float64(st.writeMilli.Load()) / 1000,
		EstimatedWriteUnits: st.estimated.Load(),
	}
}

// Attribute names.
const (
	aPK  = tables.PartitionKey
	aSK  = tables.SortKey
	aTTL = tables.TTLAttribute
)

// LogPK returns the partition of a request's log on day (2006-01-02).
func LogPK(day, requestID string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(requestID))
	return "log#" + day + "#" + strconv.Itoa(int(h.Sum32()%Shards))
}

func dayPK(day string) string { return "day#" + day }

func keyRowSK(key, provider, group string) string {
	return "k#" + key + "#" + provider + "#" + group
}

func endUserSK(eu string) string { return "e#" + eu }

// chunk is the events of one transaction and what they add up to.
type chunk struct {
	evs []*spend.Event
}

type rowID struct{ day, key, provider, group string }
type euID struct{ day, endUser string }

// aggregate is what the events of a chunk add to records and rows.
type aggregate struct {
	refs    []keys.Ref
	deltas  []keys.SpendDelta
	rows    map[rowID]*spend.DailyRow
	rowKeys []rowID
	eus     map[euID]*spend.EndUserRow
	euKeys  []euID
}

func aggregateOf(evs []*spend.Event) *aggregate {
	a := &aggregate{rows: map[rowID]*spend.DailyRow{}, eus: map[euID]*spend.EndUserRow{}}
	seen := map[keys.Ref]bool{}
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(x, y *spend.Event) int { return x.End.Compare(y.End) })
	for _, e := range sorted {
		for _, d := range e.Deltas() {
			a.deltas = append(a.deltas, d)
			if !seen[d.Ref] {
				seen[d.Ref] = true
				a.refs = append(a.refs, d.Ref)
			}
		}
		day := e.Day()
		id := rowID{day, e.KeyHash, e.Provider, e.ModelGroup}
		r, ok := a.rows[id]
		if !ok {
			r = &spend.DailyRow{Day: day, KeyHash: e.KeyHash, Provider: e.Provider, ModelGroup: e.ModelGroup}
			a.rows[id] = r
			a.rowKeys = append(a.rowKeys, id)
		}
		r.TeamID, r.UserID = e.TeamID, e.UserID
		r.Counters.Add(e)
		if e.EndUser != "" {
			eid := euID{day, e.EndUser}
			er, ok := a.eus[eid]
			if !ok {
				er = &spend.EndUserRow{Day: day, EndUser: e.EndUser}
				a.eus[eid] = er
				a.euKeys = append(a.euKeys, eid)
			}
			er.Counters.Add(e)
		}
	}
	return a
}

// chunks splits evs into transactions of at most max items each.
func chunks(evs []*spend.Event, max int) [][]*spend.Event {
	var out [][]*spend.Event
	var cur []*spend.Event
	refs := map[keys.Ref]bool{}
	rows := map[rowID]bool{}
	eus := map[euID]bool{}
	var hc holdCount
	for _, e := range evs {
		newRefs, newRows, newEUs := 0, 0, 0
		var er []keys.Ref
		if e.Nanos() > 0 {
			er = e.Refs()
		}
		for _, r := range er {
			if !refs[r] {
				newRefs++
			}
		}
		day := e.Day()
		rid := rowID{day, e.KeyHash, e.Provider, e.ModelGroup}
		if !rows[rid] {
			newRows++
		}
		eid := euID{day, e.EndUser}
		if e.EndUser != "" && !eus[eid] {
			newEUs++
		}
		newHolds := hc.add(e, false)
		if len(cur) > 0 && len(cur)+1+len(refs)+newRefs+len(rows)+newRows+len(eus)+newEUs+hc.items()+newHolds > max {
			out = append(out, cur)
			cur = nil
			clear(refs)
			clear(rows)
			clear(eus)
			hc.reset()
		}
		cur = append(cur, e)
		hc.add(e, true)
		for _, r := range er {
			refs[r] = true
		}
		rows[rid] = true
		if e.EndUser != "" {
			eus[eid] = true
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// Record implements spend.Store.
func (st *Store) Record(ctx context.Context, evs []spend.Event) (spend.Result, error) {
	var res spend.Result
	seen := make(map[string]bool, len(evs))
	list := make([]*spend.Event, 0, len(evs))
	for i := range evs {
		e := &evs[i]
		if err := e.Validate(); err != nil {
			return spend.Result{}, err
		}
		if seen[e.RequestID] {
			res.Duplicates++
			continue
		}
		seen[e.RequestID] = true
		list = append(list, e)
	}
	for _, c := range chunks(list, st.o.MaxItems) {
		if err := st.recordChunk(ctx, c, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// recordChunk commits one self-contained transaction, dropping the events
// recorded before.
func (st *Store) recordChunk(ctx context.Context, evs []*spend.Event, res *spend.Result) error {
	swept := map[string]bool{} // holds found released by the sweeper
	for attempt := 0; len(evs) > 0; attempt++ {
		nSwept := len(swept)
		if attempt >= 30 {
			return fmt.Errorf("record %d spend events: %w: gave up after %d attempts", len(evs), spend.ErrUnavailable, attempt)
		}
		a := aggregateOf(evs)
		states, moved, err := st.readRecords(ctx, a.refs)
		if err != nil {
			return err
		}
		// Spend for a regenerated key's old hash goes to the key it became;
		// its write is conditioned on that key as read, like any other.
		deltas, targets := keys.Redirect(a.deltas, moved)
		next, crossed := ddbkeys.NextStates(states, deltas)
		items := make([]types.TransactWriteItem, 0, len(evs)+len(next)+len(a.rowKeys)+len(a.euKeys))
		for _, e := range evs {
			items = append(items, types.TransactWriteItem{Put: &types.Put{
				TableName:                aws.String(st.table),
				Item:                     st.logItem(e),
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": aPK},
			}})
		}
		nLogs := len(items)
		for _, r := range targets {
			if to, ok := next[r]; ok {
				items = append(items, ddbkeys.SpendUpdate(st.keysTable, r, states[r], to))
			}
		}
		nRefs := len(items) - nLogs
		for _, id := range a.rowKeys {
			items = append(items, st.rowUpdate(a.rows[id]))
		}
		for _, id := range a.euKeys {
			items = append(items, st.endUserUpdate(a.eus[id]))
		}
		nHold0 := len(items)
		var held []*spend.Event
		if st.o.CountersTable != "" {
			var hi []types.TransactWriteItem
			hi, held = st.holdItems(evs, swept)
			items = append(items, hi...)
		}
		cctx, cancel := context.WithTimeout(ctx, st.o.Timeout)
		out, err := st.client.TransactWriteItems(cctx, &dynamodb.TransactWriteItemsInput{
			TransactItems:          items,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		cancel()
		if err == nil {
			st.transactions.Add(1)
			st.transactItems.Add(int64(len(items)))
			for _, cc := range out.ConsumedCapacity {
				st.writeMilli.Add(int64(aws.ToFloat64(cc.CapacityUnits) * 1000))
			}
			est := int64(2 * (len(items) - nLogs))
			for _, it := range items[:nLogs] {
				est += 2 * int64((ItemSize(it.Put.Item)+1023)/1024)
			}
			st.estimated.Add(est)
			res.Recorded += len(evs)
			st.markSoft(ctx, crossed, res)
			return nil
		}
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) {
			if ddb.Unavailable(err) && ctx.Err() == nil {
				if berr := backoff(ctx, attempt); berr != nil {
					return fmt.Errorf("record spend: %w: %w", spend.ErrUnavailable, err)
				}
				continue
			}
			return fmt.Errorf("record spend: %w: %w", spend.ErrUnavailable, err)
		}
		st.cancellations.Add(1)
		dup := map[int]bool{}
		other := false
		for i, r := range canceled.CancellationReasons {
			code := aws.ToString(r.Code)
			switch {
			case code == "" || code == "None":
			case code == "ConditionalCheckFailed" && i < nLogs:
				dup[i] = true
			case code == "ConditionalCheckFailed" && i < nLogs+nRefs:
				other = true // a record's period or duration changed: re-read
			case code == "ConditionalCheckFailed" && i >= nHold0 && i-nHold0 < len(held):
				swept[held[i-nHold0].RequestID] = true // its hold was released: settle without it
			default:
				other = true // TransactionConflict, throttling: retry
			}
		}
		if len(canceled.CancellationReasons) == 0 { // no reasons given: ask which logs exist
			existing, err := st.existingLogs(ctx, evs)
			if err != nil {
				return err
			}
			for i, e := range evs {
				if existing[e.RequestID] {
					dup[i] = true
				}
			}
		}
		if len(dup) > 0 {
			kept := evs[:0:0]
			for i, e := range evs {
				if !dup[i] {
					kept = append(kept, e)
				}
			}
			res.Duplicates += len(evs) - len(kept)
			evs = kept
			continue // re-aggregate without them, at once
		}
		if len(swept) > nSwept {
			continue // settle the released holds with their real cost, at once
		}
		_ = other
		if err := backoff(ctx, attempt); err != nil {
			return fmt.Errorf("record spend: %w: %w", spend.ErrUnavailable, err)
		}
	}
	return nil
}

// readRecords reads the spend of the records refs name, following the
// forwarding of regenerated keys (Records.FollowMoves).
func (st *Store) readRecords(ctx context.Context, refs []keys.Ref) (map[keys.Ref]keys.RecordSpend, map[keys.Ref]keys.Ref, error) {
	if len(refs) == 0 {
		return nil, nil, nil
	}
	states, err := st.records.SpendStates(ctx, refs)
	if err != nil {
		return nil, nil, fmt.Errorf("record spend: %w: %w", spend.ErrUnavailable, err)
	}
	moved, err := st.records.FollowMoves(ctx, refs, states)
	if err != nil {
		return nil, nil, fmt.Errorf("record spend: %w: %w", spend.ErrUnavailable, err)
	}
	return states, moved, nil
}

func (st *Store) markSoft(ctx context.Context, crossed []ddbkeys.Crossing, res *spend.Result) {
	for _, c := range crossed {
		ok, err := st.records.MarkSoft(ctx, c.Ref, c.Mark)
		if err != nil {
			st.o.Logger.LogAttrs(ctx, slog.LevelWarn, "soft budget crossing not marked",
				slog.String("record", c.Ref.String()), slog.String("error", err.Error()))
			continue
		}
		if ok {
			res.SoftCrossed = append(res.SoftCrossed, c.Ref)
		}
	}
}

func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(min(attempt+1, 10)) * 25 * time.Millisecond
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// existingLogs reports which of evs' logs exist.
func (st *Store) existingLogs(ctx context.Context, evs []*spend.Event) (map[string]bool, error) {
	ks := make([]map[string]types.AttributeValue, len(evs))
	for i, e := range evs {
		ks[i] = logKey(e.Day(), e.RequestID)
	}
	items, err := st.batchGet(ctx, ks, aSK)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, it := range items {
		out[str(it, aSK)] = true
	}
	return out, nil
}

func logKey(day, rid string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{aPK: s(LogPK(day, rid)), aSK: s(rid)}
}

// batchGet reads items by key, 100 at a time, consistently.
func (st *Store) batchGet(ctx context.Context, ks []map[string]types.AttributeValue, projection string) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	for len(ks) > 0 {
		n := min(len(ks), 100)
		ka := types.KeysAndAttributes{Keys: ks[:n], ConsistentRead: aws.Bool(true)}
		if projection != "" {
			ka.ProjectionExpression = aws.String("#p")
			ka.ExpressionAttributeNames = map[string]string{"#p": projection}
		}
		req := map[string]types.KeysAndAttributes{st.table: ka}
		ks = ks[n:]
		for attempt := 0; len(req) > 0; attempt++ {
			if attempt > 0 {
				if err := backoff(ctx, attempt); err != nil {
					return nil, fmt.Errorf("read spend logs: %w: %w", spend.ErrUnavailable, err)
				}
			}
			cctx, cancel := context.WithTimeout(ctx, st.o.Timeout)
			r, err := st.client.BatchGetItem(cctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			cancel()
			if err != nil {
				return nil, fmt.Errorf("read spend logs: %w: %w", spend.ErrUnavailable, err)
			}
			out = append(out, r.Responses[st.table]...)
			req = r.UnprocessedKeys
		}
	}
	return out, nil
}

// logItem is the log of e.
func (st *Store) logItem(e *spend.Event) map[string]types.AttributeValue {
	day := e.Day()
	it := map[string]types.AttributeValue{
		aPK:  s(LogPK(day, e.RequestID)),
		aSK:  s(e.RequestID),
		"v":  n(int64(e.Version)),
		"t0": n(e.Start.UnixMicro()),
		"t1": n(e.End.UnixMicro()),
		"st": s(string(e.Status)),
		aTTL: n(e.End.Add(st.o.LogRetention).Unix()),
	}
	for name, v := range map[string]string{
		"kh": e.KeyHash, "ka": e.KeyAlias, "tm": e.TeamID, "us": e.UserID, "eu": e.EndUser,
		"mg": e.ModelGroup, "dp": e.DeploymentID, "pv": e.Provider, "md": e.Model, "ab": e.APIBase, "ct": e.CallType,
	} {
		if v != "" {
			it[name] = s(v)
		}
	}
	for name, v := range map[string]int64{
		"pt": e.PromptTokens, "ot": e.CompletionTokens, "ht": e.CachedTokens,
		"na": int64(e.Attempts), "nr": int64(e.Retries), "nf": int64(e.Fallbacks), "sc": int64(e.StatusCode),
	} {
		if v != 0 {
			it[name] = n(v)
		}
	}
	if e.CostKnown {
		it["c"] = n(e.Cost)
	}
	if e.UsageEstimated {
		it["ue"] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if e.Stream {
		it["sm"] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if len(e.Tags) > 0 {
		l := make([]types.AttributeValue, len(e.Tags))
		for i, t := range e.Tags {
			l[i] = s(t)
		}
		it["tg"] = &types.AttributeValueMemberL{Value: l}
	}
	return it
}

// decodeLog reads a log item.
func decodeLog(it map[string]types.AttributeValue) spend.Event {
	e := spend.Event{
		Version:   int(num(it, "v")),
		RequestID: str(it, aSK),
		Start:     time.UnixMicro(num(it, "t0")).UTC(),
		End:       time.UnixMicro(num(it, "t1")).UTC(),
		Status:    spend.Status(str(it, "st")),
		KeyHash:   str(it, "kh"), KeyAlias: str(it, "ka"), TeamID: str(it, "tm"), UserID: str(it, "us"),
		EndUser: str(it, "eu"), ModelGroup: str(it, "mg"), DeploymentID: str(it, "dp"), Provider: str(it, "pv"),
		Model: str(it, "md"), APIBase: str(it, "ab"), CallType: str(it, "ct"),
		PromptTokens: num(it, "pt"), CompletionTokens: num(it, "ot"), CachedTokens: num(it, "ht"),
		Attempts: int(num(it, "na")), Retries: int(num(it, "nr")), Fallbacks: int(num(it, "nf")),
		StatusCode: int(num(it, "sc")),
	}
	if _, ok := it["c"]; ok {
		e.Cost, e.CostKnown = num(it, "c"), true
	}
	e.UsageEstimated = boolean(it, "ue")
	e.Stream = boolean(it, "sm")
	if l, ok := it["tg"].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if sv, ok := v.(*types.AttributeValueMemberS); ok {
				e.Tags = append(e.Tags, sv.Value)
			}
		}
	}
	return e
}

var counterAttrs = []string{"pt", "ot", "ht", "c", "rq", "ok", "fl"}

func counterValues(c spend.Counters) []int64 {
	return []int64{c.PromptTokens, c.CompletionTokens, c.CachedTokens, c.Spend, c.Requests, c.Successes, c.Failures}
}

func decodeCounters(it map[string]types.AttributeValue) spend.Counters {
	return spend.Counters{
		PromptTokens: num(it, "pt"), CompletionTokens: num(it, "ot"), CachedTokens: num(it, "ht"),
		Spend: num(it, "c"), Requests: num(it, "rq"), Successes: num(it, "ok"), Failures: num(it, "fl"),
	}
}

// counterUpdate ADDs c and SETs set on the item at pk, sk.
func (st *Store) counterUpdate(pk, sk string, c spend.Counters, set map[string]string) types.TransactWriteItem {
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	var add, sets []string
	for i, v := range counterValues(c) {
		if v == 0 {
			continue
		}
		a := counterAttrs[i]
		names["#"+a] = a
		values[":"+a] = n(v)
		add = append(add, "#"+a+" :"+a)
	}
	for a, v := range set {
		names["#"+a] = a
		values[":"+a] = s(v)
		sets = append(sets, "#"+a+" = :"+a)
	}
	slices.Sort(sets)
	expr := "ADD " + strings.Join(add, ", ")
	if len(sets) > 0 {
		expr += " SET " + strings.Join(sets, ", ")
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(st.table),
		Key:                       map[string]types.AttributeValue{aPK: s(pk), aSK: s(sk)},
		UpdateExpression:          aws.String(expr),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

func (st *Store) rowUpdate(r *spend.DailyRow) types.TransactWriteItem {
	return st.counterUpdate(dayPK(r.Day), keyRowSK(r.KeyHash, r.Provider, r.ModelGroup), r.Counters,
		map[string]string{"kh": r.KeyHash, "tm": r.TeamID, "us": r.UserID, "mg": r.ModelGroup, "pv": r.Provider})
}

func (st *Store) endUserUpdate(r *spend.EndUserRow) types.TransactWriteItem {
	return st.counterUpdate(dayPK(r.Day), endUserSK(r.EndUser), r.Counters, map[string]string{"eu": r.EndUser})
}

// Logs implements spend.Store.
func (st *Store) Logs(ctx context.Context, q spend.LogQuery) ([]spend.Event, error) {
	var out []spend.Event
	if q.RequestID != "" {
		from, to := q.From, q.To
		if from.IsZero() && to.IsZero() {
			to = st.o.Now()
			from = to.Add(-st.o.LogRetention)
		} else {
			from, to = q.Window(st.o.Now())
		}
		days, err := spend.Days(from, to, st.o.Now())
		if err != nil {
			return nil, err
		}
		ks := make([]map[string]types.AttributeValue, len(days))
		for i, d := range days {
			ks[i] = logKey(d, q.RequestID)
		}
		items, err := st.batchGet(ctx, ks, "")
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if e := decodeLog(it); q.Match(&e) {
				out = append(out, e)
			}
		}
		return spend.SortLogs(out, q.Limit), nil
	}
	from, to := q.Window(st.o.Now())
	days, err := spend.Days(from, to.Add(-time.Nanosecond), st.o.Now())
	if err != nil {
		return nil, err
	}
	var pks []string
	for _, d := range days {
		for sh := range Shards {
			pks = append(pks, "log#"+d+"#"+strconv.Itoa(sh))
		}
	}
	filter := map[string]string{"kh": q.KeyHash, "us": q.UserID, "tm": q.TeamID, "eu": q.EndUser}
	items, err := st.queryAll(ctx, pks, "", filter)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		e := decodeLog(it)
		if q.Match(&e) && !e.End.Before(from) && e.End.Before(to) {
			out = append(out, e)
		}
	}
	return spend.SortLogs(out, q.Limit), nil
}

// queryAll queries every partition in pks (sort keys beginning with
// prefix, items whose attributes equal filter's non-empty values), a few
// at a time.
func (st *Store) queryAll(ctx context.Context, pks []string, prefix string, filter map[string]string) ([]map[string]types.AttributeValue, error) {
	var (
		mu    sync.Mutex
		out   []map[string]types.AttributeValue
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 8)
	)
	for _, pk := range pks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			items, err := st.query(ctx, pk, prefix, filter)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			out = append(out, items...)
		}()
	}
	wg.Wait()
	return out, first
}

func (st *Store) query(ctx context.Context, pk, prefix string, filter map[string]string) ([]map[string]types.AttributeValue, error) {
	names := map[string]string{"#pk": aPK}
	values := map[string]types.AttributeValue{":pk": s(pk)}
	cond := "#pk = :pk"
	if prefix != "" {
		names["#sk"] = aSK
		values[":pre"] = s(prefix)
		cond += " AND begins_with(#sk, :pre)"
	}
	var fs []string
	for a, v := range filter {
		if v == "" {
			continue
		}
		names["#f"+a] = a
		values[":f"+a] = s(v)
		fs = append(fs, "#f"+a+" = :f"+a)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(st.table),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
	if len(fs) > 0 {
		slices.Sort(fs)
		in.FilterExpression = aws.String(strings.Join(fs, " AND "))
	}
	var out []map[string]types.AttributeValue
	for {
		cctx, cancel := context.WithTimeout(ctx, st.o.Timeout)
		r, err := st.client.Query(cctx, in)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("query spend table: %w: %w", spend.ErrUnavailable, err)
		}
		out = append(out, r.Items...)
		if len(r.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = r.LastEvaluatedKey
	}
}

// Daily implements spend.Store.
func (st *Store) Daily(ctx context.Context, q spend.DailyQuery) ([]spend.DailyRow, error) {
	days, err := spend.Days(q.From, q.To, st.o.Now())
	if err != nil {
		return nil, err
	}
	pks := make([]string, len(days))
	for i, d := range days {
		pks[i] = dayPK(d)
	}
	prefix := "k#"
	if q.KeyHash != "" {
		prefix = "k#" + q.KeyHash + "#"
	}
	items, err := st.queryAll(ctx, pks, prefix, map[string]string{"tm": q.TeamID, "us": q.UserID, "mg": q.ModelGroup, "pv": q.Provider})
	if err != nil {
		return nil, err
	}
	out := make([]spend.DailyRow, 0, len(items))
	for _, it := range items {
		r := spend.DailyRow{
			Day: strings.TrimPrefix(str(it, aPK), "day#"), KeyHash: str(it, "kh"), TeamID: str(it, "tm"), UserID: str(it, "us"),
			ModelGroup: str(it, "mg"), Provider: str(it, "pv"), Counters: decodeCounters(it),
		}
		if q.Match(&r) {
			out = append(out, r)
		}
	}
	spend.SortRows(out)
	return out, nil
}

// Totals implements spend.Store.
func (st *Store) Totals(ctx context.Context, q spend.TotalsQuery) ([]spend.Total, error) {
	if q.By != spend.ByEndUser {
		rows, err := st.Daily(ctx, spend.DailyQuery{From: q.From, To: q.To})
		if err != nil {
			return nil, err
		}
		return spend.GroupTotals(q.By, rows, nil)
	}
	days, err := spend.Days(q.From, q.To, st.o.Now())
	if err != nil {
		return nil, err
	}
	pks := make([]string, len(days))
	for i, d := range days {
		pks[i] = dayPK(d)
	}
	items, err := st.queryAll(ctx, pks, "e#", nil)
	if err != nil {
		return nil, err
	}
	eus := make([]spend.EndUserRow, 0, len(items))
	for _, it := range items {
		eus = append(eus, spend.EndUserRow{Day: strings.TrimPrefix(str(it, aPK), "day#"), EndUser: str(it, "eu"), Counters: decodeCounters(it)})
	}
	return spend.GroupTotals(q.By, nil, eus)
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func str(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(it map[string]types.AttributeValue, name string) int64 {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(v.Value, 10, 64)
		return i
	}
	return 0
}

func boolean(it map[string]types.AttributeValue, name string) bool {
	v, ok := it[name].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

// ItemSize is an item's size as DynamoDB bills it (closely): attribute
// names plus values; a number as its digits.
func ItemSize(it map[string]types.AttributeValue) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return len(x.Value)/2 + 1
	case *types.AttributeValueMemberBOOL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + valueSize(e)
		}
		return n
	}
	return 1
}
