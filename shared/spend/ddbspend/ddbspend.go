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
//	        well under 1 KB: v t0 t1 (start/end, epoch µs) st kh ka tm us eu og mg dp pv md ab ct
//	        pt ot ht (tokens) c (cost, integer nano-USD; absent: unknown) ue na nr nf tg sm sc,
//	        expires_at (TTL: Options.LogRetention after the end)
//	daily   pk "day#<YYYY-MM-DD>"  sk "k#<key hash>#<provider>#<model group>"
//	        kh tm us og mg pv (SET: the key's team, user and organization as its events last named them),
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
//
// # Files
//
// One file per record: logs.go (the log item), daily.go (daily and end-user
// rows), holds.go (settling and sweeping strict-budget holds, whose items
// ddblimits writes); record.go is the recording transaction over them and
// query.go the reads they share.
package ddbspend

import (
	"context"
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
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

// ItemSize is an item's size as DynamoDB bills it (closely): attribute
// names plus values; a number as its digits.
func ItemSize(it ddb.Item) int {
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
