//go:build scale

package hotscope

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
)

// TestHotLeaseScale is issue 34's scale run for leases: three instances
// on one key and team, each bounded to 200 requests in flight
// (max_parallel_requests), demand 100 requests a second (5 times one
// item's write limit) for a whole real minute, through a throttler that
// lets each item take 20 write units a second (DynamoDB's 1,000 at a
// scale of 1:50: one lease item alone carries about 7 admissions a
// second). Each admitted request holds its leases for 1.5 s ("within":
// about 150 in flight, the bound has room) or 4 s with more goroutines
// ("over": demand twice what the bound admits). HOTSCOPE_ITEMWRITES=20
// hints the ceiling to the store (default: none, only throttling turns the
// leases hot).
//
//	go test -tags scale -run TestHotLeaseScale -v -timeout 5m ./test/hotscope/
func TestHotLeaseScale(t *testing.T) {
	var hint float64
	if v, err := strconv.ParseFloat(os.Getenv("HOTSCOPE_ITEMWRITES"), 64); err == nil {
		hint = v
	}
	for _, c := range []struct {
		name    string
		hold    time.Duration
		workers int
	}{{"within", 1500 * time.Millisecond, 64}, {"over", 4 * time.Second, 96}} {
		t.Run(c.name, func(t *testing.T) {
			r := run{Instances: 3, Workers: c.workers, ItemRate: 20, Parallel: 200, Hold: c.hold, Demand: 100, Window: time.Minute, Timeout: 10 * time.Second}
			res := drive(t, r, ddbStore(ddblimits.Options{ItemWrites: hint, Timeout: 10 * time.Second}))
			t.Logf("%d instances, %d in flight on key and team, each held %v, %.0f requests/s for %v, items throttled above %.0f units/s:\n%s",
				r.Instances, r.Parallel, r.Hold, r.Demand, r.Window, r.ItemRate, res)
			if res.OverLimit != 0 || res.ClientThrottles != 0 || res.Unreleased != 0 {
				t.Errorf("over the bound %d, client-visible throttles %d, leases left %d: want 0", res.OverLimit, res.ClientThrottles, res.Unreleased)
			}
		})
	}
}
