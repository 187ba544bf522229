// Package hotscope runs many store instances on one hot key and team
// through ddblocal's Throttler (DynamoDB's per-partition write ceiling,
// scaled) and counts what issue 34 asks: admitted, refused, over the
// limit, throttles seen by clients, DynamoDB calls and write units per
// admitted request, admission times.
//
// TestHotScopeCounts runs in CI: counts only, no timing assertion.
// TestHotScopeScale (-tags scale) is the timed run of a whole window:
//
//	go test -tags scale -run TestHotScopeScale -v ./test/hotscope/
package hotscope

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// run is one scale run's setting.
type run struct {
	Instances int           // store instances (Lambda instances), each its own client
	ItemRate  float64       // the throttler's write units a second per item (scaled)
	RPM       int64         // the key's and the team's limit, per window
	Demand    float64       // requests a second, over all instances (0: as fast as Workers go)
	Requests  int           // total requests (with Demand 0)
	Workers   int           // goroutines per instance
	Window    time.Duration // the run's length in real time (with Demand)
	Timeout   time.Duration // each request's deadline
	// Budget, when not 0, puts the key and the team under strict budgets
	// of Budget reservations of Amount each (nano-USD): every request
	// reserves Amount on both with its admission (a hold). Its real cost
	// is the reservation's, so settling it would change no counter: the
	// run leaves its holds open (TestHotBudget settles and sweeps).
	Budget, Amount int64
	// Parallel bounds the key's and the team's requests in flight
	// (max_parallel_requests), each admitted request holding its leases
	// for Hold before releasing them (leases_test.go).
	Parallel int64
	Hold     time.Duration
}

// result is what a run counted.
type result struct {
	Admitted, Refused, FailedOpen, Errors int64
	OverLimit                             int64 // admissions over the limit or the budget (counted in the store; for a bound, by the client: must be 0)
	Peak, Unreleased, RefusedWithRoom     int64 // the most requests in flight at once, the leases left after the run, the refusals while fewer than the bound were in flight (with a Parallel bound)
	ClientThrottles                       int64 // admissions answered with an error or uncounted because DynamoDB throttled
	Calls, Units, ThrottledCalls          int64 // DynamoDB write calls, their units, the calls the throttler refused
	Counted                               int64 // the requests the store's counter items hold (key scope)
	Reserved, Shards                      int64 // with a Budget: what the key's budget counter holds (its shards summed), and its shards
	P50, P99                              time.Duration
	// Slow counts the admissions that took over 100 ms, by the tenth of
	// the run they started in (where the tail of the times comes from).
	Slow [10]int64
}

func (r result) String() string {
	per := func(n int64) float64 { return float64(n) / float64(max(r.Admitted, 1)) }
	return fmt.Sprintf("admitted %d, refused %d, over-limit %d, failed open %d, errors %d, client-visible throttles %d; "+
		"DynamoDB write calls %d (%.3f per admitted), write units %d (%.3f per admitted), throttled calls %d; p50 %v, p99 %v",
		r.Admitted, r.Refused, r.OverLimit, r.FailedOpen, r.Errors, r.ClientThrottles,
		r.Calls, per(r.Calls), r.Units, per(r.Units), r.ThrottledCalls, r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond)) +
		fmt.Sprintf("; over 100 ms by tenth of the run: %v", r.Slow) + r.budget() + r.leaseString()
}

// budget is what a run with strict budgets adds to String.
func (r result) budget() string {
	if r.Shards == 0 {
		return ""
	}
	return fmt.Sprintf("; the key's budget counter holds %d nano-USD; budget shards (key + team) %d", r.Reserved, r.Shards)
}

// clean logs the run and fails t unless no admission went over the
// limit (the budget, the bound: what), failed open, met throttling or an
// error.
func (r result) clean(t testing.TB, what string) {
	t.Helper()
	t.Log(r)
	if r.OverLimit != 0 || r.FailedOpen != 0 || r.ClientThrottles != 0 || r.Errors != 0 {
		t.Errorf("over the %s %d, failed open %d, client-visible throttles %d, errors %d: want 0", what, r.OverLimit, r.FailedOpen, r.ClientThrottles, r.Errors)
	}
}

// newStore is one instance's store on the throttler.
type newStore func(t testing.TB, url string, names tables.Names) limits.Store

func ddbStore(o ddblimits.Options) newStore {
	return func(t testing.TB, url string, names tables.Names) limits.Store {
		o.HoldsTable = names.Spend
		return ddblimits.New(ddb.NewClient(ddblocal.ConfigAt(url), ddb.ClientOptions{Emulator: true}), names.Counters, o)
	}
}

// drive runs r: every request is the same key and team, both limited to
// r.RPM, in one window whose clock starts with the run (Now = the
// window's start + the time elapsed).
func drive(t testing.TB, r run, mk newStore) result {
	names := ddblocal.Tables(t)
	th := ddblocal.NewThrottler(t, "", r.ItemRate)
	stores := make([]limits.Store, r.Instances)
	for i := range stores {
		stores[i] = mk(t, th.URL, names)
	}
	key := limits.Scope{Kind: limits.KindKey, ID: fmt.Sprintf("hot-%d", time.Now().UnixNano()), RPM: r.RPM, Parallel: r.Parallel}
	team := limits.Scope{Kind: limits.KindTeam, ID: key.ID + "-team", RPM: r.RPM, Parallel: r.Parallel}
	var held leases
	window := limits.WindowStart(time.Now()).Add(time.Hour)
	start := time.Now()
	var res result
	var (
		mu    sync.Mutex
		times []time.Duration
	)
	var issued atomic.Int64
	interval := time.Duration(0)
	if r.Demand > 0 {
		interval = time.Duration(float64(time.Second) / r.Demand)
	}
	var wg sync.WaitGroup
	for i := range r.Instances {
		for range r.Workers {
			wg.Go(func() {
				for {
					n := issued.Add(1) - 1
					var at time.Time
					if interval > 0 {
						at = start.Add(time.Duration(n) * interval)
						if at.Sub(start) >= r.Window {
							return
						}
						time.Sleep(time.Until(at))
					} else if n >= int64(r.Requests) {
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
					t0 := time.Now()
					// A run shorter than a minute stands for the whole window.
					now := window.Add(time.Duration(float64(t0.Sub(start)) * float64(time.Minute) / float64(max(r.Window, time.Minute))))
					if interval == 0 {
						now = window.Add(30 * time.Second)
					}
					req := limits.AdmitRequest{Now: now, Scopes: []limits.Scope{key, team}, Hold: r.hold(key, team, n, now)}
					if r.Parallel > 0 {
						req.Lease, req.LeaseExpires = strconv.FormatInt(n, 10), now.Add(r.Timeout+limits.LeaseGrace)
					}
					held.busy.Add(1)
					d, err := stores[i].Admit(ctx, req)
					held.busy.Add(-1)
					el := time.Since(t0)
					cancel()
					mu.Lock()
					times = append(times, el)
					if el > 100*time.Millisecond && r.Window > 0 {
						res.Slow[min(int(10*t0.Sub(start)/r.Window), 9)]++
					}
					mu.Unlock()
					switch {
					case err != nil:
						if atomic.AddInt64(&res.Errors, 1) <= 3 {
							t.Logf("admission at %v: %v", t0.Sub(start).Round(time.Millisecond), err)
						}
						if errors.Is(err, limits.ErrUnavailable) {
							atomic.AddInt64(&res.ClientThrottles, 1)
						}
					case d.FailedOpen:
						atomic.AddInt64(&res.FailedOpen, 1)
						atomic.AddInt64(&res.Admitted, 1)
						atomic.AddInt64(&res.ClientThrottles, 1)
					case d.Allowed:
						atomic.AddInt64(&res.Admitted, 1)
						if r.Parallel > 0 {
							held.hold(t, stores[i], r, d.Admission, &res)
						}
					default:
						atomic.AddInt64(&res.Refused, 1)
						if r.Parallel > 0 {
							held.refused(r, &res)
						}
					}
				}
			})
		}
	}
	wg.Wait()
	res.OverLimit = max(0, res.Admitted-r.RPM)
	if r.Budget > 0 {
		res.OverLimit = max(0, res.Admitted-min(r.RPM, r.Budget))
		res.Reserved, res.Shards = r.reserved(t, stores[0], key, team)
		if res.Reserved > r.Budget*r.Amount {
			res.OverLimit += (res.Reserved - r.Budget*r.Amount + r.Amount - 1) / r.Amount
		}
	}
	if r.Parallel > 0 {
		res.OverLimit, res.Peak = held.over.Load(), held.peak.Load()
	}
	res.Calls, res.Units, res.ThrottledCalls = th.Calls.Load(), th.Units.Load(), th.ThrottledCalls.Load()
	slices.Sort(times)
	if len(times) > 0 {
		res.P50, res.P99 = times[len(times)/2], times[len(times)*99/100]
	}
	if c, ok := stores[0].(interface {
		Counted(ctx context.Context, kind limits.Kind, id string, now time.Time) (int64, error)
	}); ok {
		n, err := c.Counted(context.Background(), key.Kind, key.ID, window)
		if err != nil {
			t.Fatal(err)
		}
		res.Counted = n
	}
	if r.Parallel > 0 {
		res.Unreleased = unreleased(t, stores[0], window, key, team)
	}
	return res
}

// TestHotScopeCounts: 4 instances of 16 goroutines each send 3,000
// requests on one key and team limited to 1,000 RPM, through a throttler
// that lets each item take 40 write units a second, in one window. The
// limit holds exactly (none over, and with demand far above the limit,
// exactly the limit admitted: no false refusal), no client sees
// throttling, and the write units per admitted request stay bounded.
// Counts only: the time the run takes is not asserted.
//
// With the ceiling hinted (ItemWrites), the scopes turn hot by their rate;
// without, the store believes DynamoDB's 1,000 units a second and only the
// throttling it meets turns them hot: the instances that did not meet it
// learn it from the counter item that refuses their next write.
func TestHotScopeCounts(t *testing.T) {
	for _, hint := range []float64{40, 0} {
		t.Run(fmt.Sprintf("hint=%v", hint), func(t *testing.T) {
			// Generous bounds: on a loaded machine the emulator may take
			// seconds, and a store past its bound fails open (another test).
			r := run{Instances: 4, Workers: 16, ItemRate: 40, RPM: 1000, Requests: 3000, Timeout: 3 * time.Minute}
			checkCounts(t, r, drive(t, r, ddbStore(ddblimits.Options{ItemWrites: hint, Timeout: 30 * time.Second, AdmitTimeout: 2 * time.Minute})))
		})
	}
}

func checkCounts(t *testing.T, r run, res result) {
	res.clean(t, "limit")
	// The stated tail: each instance may hold one unused block of each scope.
	if tail := int64(r.Instances) * limits.HotBlockMax(r.RPM); res.Admitted < r.RPM-tail {
		t.Errorf("admitted %d of a %d limit with demand %d: more refused than the tail of %d", res.Admitted, r.RPM, r.Requests, tail)
	}
	if res.Counted < res.Admitted || res.Counted > r.RPM {
		t.Errorf("the counters hold %d requests: fewer than the %d admitted, or more than the limit", res.Counted, res.Admitted)
	}
	if u := float64(res.Units) / float64(res.Admitted); u > 2 {
		t.Errorf("%.2f write units per admitted request, want at most 2", u)
	}
}
