package limits

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// Strict budgets (general_settings.strict_budgets) live in this package:
// the reservation (Hold, this file), its worst-case price (price.go), the
// memory ledger (ledger.go) and the sweeper (sweep.go). The DynamoDB items
// are written beside their tables: the admission's in ddblimits, the
// settlement's and the sweeper's in ddbspend.
//
// A request that some budget applies to reserves its worst-case cost with
// its admission: the admission carries a Hold, which adds Hold.Amount to a
// committed counter per budget (record and budget period) on the condition
// that the counter stays at or below the budget, and stores the hold
// itself, all in the same atomic write as the rate-limit counters. The
// counter starts at the record's period spend as the gateway read it
// (BudgetCounter.Base). The request's spend event carries the hold
// (spend.Event.Hold), also when its admission got no answer (a deadline, a
// lost answer: the write may have been applied), and the spend consumer
// settles it exactly once, in
// its recording transaction: it deletes the hold and adds (real cost -
// Amount) to each counter; if the hold is gone (released by the sweeper),
// it adds the real cost (Hold.SettleDelta); a hold never written is
// settled the same way, at the real cost of a request whose admission
// failed: 0. A request that never sends its
// spend event (a crash) leaves its hold until Hold.Expires, when the
// sweeper deletes it and gives Amount back, exactly once against the
// consumer. So a counter is always at least the recorded spend of its
// period plus what is still reserved, and an admission never takes it past
// the budget: recorded spend never exceeds max_budget as long as a
// request's real cost never exceeds its reservation.

// Hold is the worst-case cost a request reserves against its budgets: made
// with its admission, carried by its spend event, settled by recording the
// event or released by the sweeper.
type Hold struct {
	ID      string          // the request id (x-litellm-call-id)
	Amount  int64           // nano-USD reserved on every budget
	Expires time.Time       // when the sweeper may release it: the request's bound plus HoldGrace
	Budgets []BudgetCounter // each counter at most once
}

// BudgetCounter is the committed counter of one record's budget period.
// Kind, ID and Period name it; End, Base and Max are what the admission
// checks (a hold read back from a spend event has only the name's parts).
type BudgetCounter struct {
	Kind   string    // the record's kind (keys.Kind: key, team, user, member, enduser)
	ID     string    // the record's id
	Period time.Time // start of the budget period; zero: a budget without budget_duration
	End    time.Time // end of the period (zero: none); the counter item's TTL follows it
	Base   int64     // nano-USD: the record's spend in the period as the gateway read it
	Max    int64     // nano-USD: max_budget
	// Shard is the shard of a hot budget's counter the reservation took
	// (hot_budget.go; 0: the counter's own item), part of the name, so
	// that settlement and the sweeper give back there. The admitter sets
	// it, with Shards (> 0: the counter is hot, over that many shards) and
	// Cap (the shard's cap, nano-USD).
	Shard  int
	Shards int
	Cap    int64
}

// Counter returns the counter's name, the partition key of its item in the
// counters table: "bud#<kind>#<id>#<period start, unix s>", and
// ".<shard>" after it for a hot budget's shard other than 0.
func (b BudgetCounter) Counter() string {
	name := BudgetCounterName(b.Kind, b.ID, b.Period)
	if b.Shard > 0 {
		name += "." + strconv.Itoa(b.Shard)
	}
	return name
}

// BudgetCounterName is the name of a record's counter for the period
// starting at period (zero: no budget_duration).
func BudgetCounterName(kind, id string, period time.Time) string {
	var p int64
	if !period.IsZero() {
		p = period.Unix()
	}
	return "bud#" + kind + "#" + id + "#" + strconv.FormatInt(p, 10)
}

// ParseBudgetCounter reads a counter's name (BudgetCounterName) back into
// its kind, id and period. A kind holds no '#'; an id may (a team member's).
func ParseBudgetCounter(name string) (BudgetCounter, error) {
	rest, ok := strings.CutPrefix(name, "bud#")
	kind, rest, ok2 := strings.Cut(rest, "#")
	i := strings.LastIndexByte(rest, '#')
	if !ok || !ok2 || i < 0 {
		return BudgetCounter{}, fmt.Errorf("%w: budget counter name %q", ErrInvalid, name)
	}
	period, shard, hot := strings.Cut(rest[i+1:], ".")
	p, err := strconv.ParseInt(period, 10, 64)
	b := BudgetCounter{Kind: kind, ID: rest[:i]}
	if p != 0 {
		b.Period = time.Unix(p, 0).UTC()
	}
	if hot {
		n, serr := strconv.Atoi(shard)
		b.Shard, err = n, errors.Join(err, serr)
	}
	if err != nil || b.Kind == "" || b.ID == "" || b.Shard < 0 || b.Shard >= MaxShards || b.Counter() != name {
		return BudgetCounter{}, fmt.Errorf("%w: budget counter name %q", ErrInvalid, name)
	}
	return b, nil
}

// Counters returns the names of the hold's counters.
func (h *Hold) Counters() []string {
	out := make([]string, len(h.Budgets))
	for i, b := range h.Budgets {
		out[i] = b.Counter()
	}
	return out
}

// SettleDelta is what settling h at its real cost adds to each of its
// counters: real - Amount while the hold is open (its delete and the
// additions in one atomic write), real once the sweeper released it and
// gave Amount back.
func (h *Hold) SettleDelta(real int64, released bool) int64 {
	if released {
		return real
	}
	return real - h.Amount
}

// HoldShards is the number of partitions holds are spread over (one item
// takes ~1,000 writes/s; a hold costs a put and a delete).
const HoldShards = 32

// HoldPartition returns the partition key of holds' shard i: "hold#<i>".
func HoldPartition(i int) string { return "hold#" + strconv.Itoa(i) }

// HoldKey returns the key of a hold's item in the spend table: pk
// HoldPartition(fnv32a(id) % HoldShards), sk "<expiry, unix ms, 13
// digits>#<id>" (HoldSortKey), so that the sweeper finds expired holds with
// one range query per shard.
func HoldKey(id string, expires time.Time) (pk, sk string) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return HoldPartition(int(h.Sum32() % HoldShards)), HoldSortKey(expires) + "#" + id
}

// HoldSortKey is the sort key prefix of holds expiring at t: every hold
// that expired before t sorts below HoldSortKey(t).
func HoldSortKey(t time.Time) string { return fmt.Sprintf("%013d", t.UnixMilli()) }

// MaxHoldBudgets bounds Hold.Budgets: key, team, user, member, end user,
// organization, and the key's model_max_budget entry for the model
// requested.
const MaxHoldBudgets = 7

// Validate checks h; its error wraps ErrInvalid.
func (h *Hold) Validate() error {
	switch {
	case h.ID == "":
		return fmt.Errorf("%w: hold without an id", ErrInvalid)
	case h.Amount < 0:
		return fmt.Errorf("%w: hold of a negative amount %d", ErrInvalid, h.Amount)
	case h.Expires.IsZero():
		return fmt.Errorf("%w: hold without an expiry", ErrInvalid)
	case len(h.Budgets) == 0 || len(h.Budgets) > MaxHoldBudgets:
		return fmt.Errorf("%w: hold on %d budgets (1..%d)", ErrInvalid, len(h.Budgets), MaxHoldBudgets)
	}
	seen := map[string]bool{}
	for _, b := range h.Budgets {
		c := b.Counter()
		if b.Kind == "" || b.ID == "" || b.Max < 0 || b.Shard < 0 || b.Shard >= MaxShards || seen[c] {
			return fmt.Errorf("%w: hold budget %q", ErrInvalid, c)
		}
		seen[c] = true
	}
	return nil
}
