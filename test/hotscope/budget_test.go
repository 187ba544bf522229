package hotscope

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
)

// hold is request n's strict-budget hold on the key's and the team's
// budgets (nil without r.Budget).
func (r run) hold(key, team limits.Scope, n int64, now time.Time) *limits.Hold {
	if r.Budget == 0 {
		return nil
	}
	return &limits.Hold{ID: fmt.Sprintf("%s-%d", key.ID, n), Amount: r.Amount, Expires: now.Add(time.Hour), Budgets: []limits.BudgetCounter{
		{Kind: "key", ID: key.ID, Max: r.Budget * r.Amount},
		{Kind: "team", ID: team.ID, Max: r.Budget * r.Amount},
	}}
}

// reserved reads what the key's and the team's budget counters hold, the
// key's, and the shards of both.
func (r run) reserved(t testing.TB, s limits.Store, key, team limits.Scope) (reserved, shards int64) {
	for _, sc := range []limits.Scope{key, team} {
		c, n, err := s.(*ddblimits.Store).BudgetCommitted(context.Background(), string(sc.Kind), sc.ID, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if sc == key {
			reserved = c
		}
		shards += int64(max(n, 1))
	}
	return reserved, shards
}

// TestHotBudgetCounts: TestHotScopeCounts with the key and the team under
// strict budgets of 1,000 reservations each (their RPM limits twice that,
// so the budgets bind): 4 instances of 16 goroutines send 3,000 requests
// through a throttler that lets each item take 40 write units a second (a
// budget counter: 20 reservations a second). The budgets hold exactly
// (none over: the key's counter holds exactly the admitted reservations),
// no client sees throttling, and what goes unreserved is at most the
// stated tail: less than one reservation per shard. Counts only.
func TestHotBudgetCounts(t *testing.T) {
	for _, hint := range []float64{40, 0} {
		t.Run(fmt.Sprintf("hint=%v", hint), func(t *testing.T) {
			r := run{Instances: 4, Workers: 16, ItemRate: 40, RPM: 2000, Budget: 1000, Amount: 1_000_000, Requests: 3000, Timeout: 3 * time.Minute}
			res := drive(t, r, ddbStore(ddblimits.Options{ItemWrites: hint, Timeout: 30 * time.Second, AdmitTimeout: 2 * time.Minute}))
			checkBudget(t, r, res)
		})
	}
}

func checkBudget(t *testing.T, r run, res result) {
	t.Helper()
	res.clean(t, "budget")
	// An admission that got no answer may have reserved (its spend event
	// would give it back): at most one per error.
	if res.Reserved < res.Admitted*r.Amount || res.Reserved > (res.Admitted+res.Errors)*r.Amount {
		t.Errorf("the key's budget counter holds %d, want the %d admitted reservations of %d (and at most one per error, %d)", res.Reserved, res.Admitted, r.Amount, res.Errors)
	}
	if res.Shards < 4 {
		t.Errorf("the key's and team's budget counters have %d shards together: they did not turn hot", res.Shards)
	}
	// A reservation writes 3 items in a transaction (a shard of each budget,
	// the hold): 6 units; refused and retried writes add some (one counter
	// item for both budgets, as before hot budgets: about 20).
	if u := float64(res.Units) / float64(max(res.Admitted, 1)); u > 12 {
		t.Errorf("%.2f write units per admitted request, want at most 12", u)
	}
	// The stated tail: each shard of each budget short of one reservation.
	if res.Admitted < r.Budget-res.Shards {
		t.Errorf("admitted %d of a budget of %d reservations: more refused than the tail of %d", res.Admitted, r.Budget, res.Shards)
	}
}
