//go:build scale

package hotscope

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
)

// TestHotScopeScale is issue 34's scale run: three instances on one key
// and team, each limited to 3,000 RPM, through a throttler that lets each
// item take 20 write units a second (DynamoDB's 1,000 at a scale of 1:50),
// with demand 5 times one item's write limit (100 requests a second: twice
// the limit) for a whole real minute, the window. HOTSCOPE_ITEMWRITES=0
// gives the store no hint of the ceiling (it must learn it from throttling).
//
//	go test -tags scale -run TestHotScopeScale -v -timeout 5m ./test/hotscope/
func TestHotScopeScale(t *testing.T) {
	r := run{Instances: 3, Workers: 32, ItemRate: 20, RPM: 3000, Demand: 100, Window: time.Minute, Timeout: 5 * time.Second}
	res := scaleRun(t, r)
	if res.OverLimit != 0 || res.ClientThrottles != 0 {
		t.Errorf("over the limit %d, client-visible throttles %d: want 0", res.OverLimit, res.ClientThrottles)
	}
	if res.Admitted < r.RPM*99/100 {
		t.Errorf("admitted %d, less than 99%% of %d", res.Admitted, r.RPM)
	}
	if u := float64(res.Units) / float64(max(res.Admitted, 1)); u > 2 {
		t.Errorf("%.2f write units per admitted request, want at most 2", u)
	}
}

// TestHotBudgetScale is TestHotScopeScale with the key and the team under
// strict budgets of 3,000 reservations each (RPM limits of 6,000, so the
// budgets bind): 100 requests a second, 10 times what one budget counter
// takes (2 units a reservation, in a transaction), for a real minute.
//
//	go test -tags scale -run TestHotBudgetScale -v -timeout 5m ./test/hotscope/
func TestHotBudgetScale(t *testing.T) {
	r := run{Instances: 3, Workers: 32, ItemRate: 20, RPM: 6000, Budget: 3000, Amount: 1_000_000, Demand: 100, Window: time.Minute, Timeout: 5 * time.Second}
	checkBudget(t, r, scaleRun(t, r))
}

// scaleRun drives r with the ceiling hinted (HOTSCOPE_ITEMWRITES, default
// r.ItemRate) and logs what it counted.
func scaleRun(t *testing.T, r run) result {
	hint := r.ItemRate
	if v, err := strconv.ParseFloat(os.Getenv("HOTSCOPE_ITEMWRITES"), 64); err == nil {
		hint = v
	}
	res := drive(t, r, ddbStore(ddblimits.Options{ItemWrites: hint}))
	t.Logf("%d instances, %d RPM on key and team (budgets of %d reservations), %.0f requests/s for %v, items throttled above %.0f units/s:\n%s",
		r.Instances, r.RPM, r.Budget, r.Demand, r.Window, r.ItemRate, res)
	return res
}
