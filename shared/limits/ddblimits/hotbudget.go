package ddblimits

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/limits"
)

// Hot budget counters (limits/hot_budget.go):
//
//	counters table  pk "bud#<kind>#<id>#<period>"     c, hot (N, shards), hb (N, c when it turned hot)
//	                pk "bud#<kind>#<id>#<period>.<i>" c (shard i > 0)
//
// SwitchBudget: SET hot = :n, hb = if_not_exists(c, :base), c =
// if_not_exists(c, :base) IF attribute_not_exists(hot). A cold reservation
// also requires attribute_not_exists(hot) (refused, its ALL_OLD item names
// the shards); a reservation on shard 0 requires attribute_exists(hot) AND
// c <= cap - r, on shard i attribute_not_exists(c) OR c <= cap - r.
// Settlement and the sweeper ADD to the counter the hold names, the shard.

var _ limits.BudgetTaker = backend{}

// SwitchBudget implements limits.BudgetTaker.
func (b backend) SwitchBudget(ctx context.Context, bc limits.BudgetCounter, shards int) (int, int64, error) {
	values := ddb.Item{":n": ddb.N(int64(shards)), ":base": ddb.N(bc.Base)}
	set := "hot = :n, hb = if_not_exists(c, :base), c = if_not_exists(c, :base)"
	if !bc.End.IsZero() {
		set += ", expires_at = :exp"
		values[":exp"] = ddb.N(bc.End.Add(BudgetTTL).Unix())
	}
	return b.s.turnHot(ctx, limits.BudgetCounterName(bc.Kind, bc.ID, bc.Period), set, values)
}

// ReadBudget implements limits.BudgetTaker.
func (b backend) ReadBudget(ctx context.Context, bc limits.BudgetCounter) (int64, error) {
	c, _, _, err := b.s.committed(ctx, bc.Counter())
	return c, err
}

// budgetBlocked is the outcome of budget j's refusal, whose item held old:
// no room, or a cold reservation on a counter turned hot.
func budgetBlocked(h *limits.Hold, j int, old ddb.Item) limits.Outcome {
	out := limits.BlockedByBudget(j, ddb.Int0(old, "c"))
	if n := ddb.Int0(old, "hot"); n > 0 && h.Budgets[j].Shards == 0 {
		out.HotShards, out.HotBase = int(n), ddb.Int0(old, "hb")
	}
	return out
}

// BudgetCommitted returns what a budget counter holds over all its shards
// (its own item's c, and each shard's when it is hot) and its shards (0:
// cold); strongly consistent reads, for tests and tools.
func (s *Store) BudgetCommitted(ctx context.Context, kind, id string, period time.Time) (total int64, shards int, err error) {
	b := limits.BudgetCounter{Kind: kind, ID: id, Period: period}
	total, _, shards, err = s.committed(ctx, b.Counter())
	for b.Shard = 1; err == nil && b.Shard < shards; b.Shard++ {
		var c int64
		c, _, _, err = s.committed(ctx, b.Counter())
		total += c
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read budget counter: %w", err)
	}
	return total, shards, nil
}
