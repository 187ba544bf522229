package ddblimits_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// leaseRun counts what hot-lease workers saw.
type leaseRun struct {
	admitted, refused, errs, failedOpen, peak atomic.Int64
}

// runLeases runs workers goroutines on each of the stores, rounds
// admissions each on key and team (both bounded by bound), holding each
// lease for hold; in flight is counted by the test between admission and
// release.
func runLeases(t *testing.T, stores []*ddblimits.Store, key, team limits.Scope, workers, rounds int, hold time.Duration) *leaseRun {
	var (
		r        leaseRun
		inFlight atomic.Int64
		wg       sync.WaitGroup
	)
	now := time.Now()
	for i, s := range stores {
		for w := range workers {
			wg.Go(func() {
				for n := range rounds {
					req := limits.AdmitRequest{Now: now, Scopes: []limits.Scope{key, team},
						Lease: fmt.Sprintf("%d.%d.%d", i, w, n), LeaseExpires: now.Add(time.Hour)}
					d, err := s.Admit(context.Background(), req)
					switch {
					case err != nil:
						if r.errs.Add(1) <= 3 {
							t.Logf("Admit: %v", err)
						}
						continue
					case d.FailedOpen:
						r.failedOpen.Add(1)
						continue
					case !d.Allowed:
						r.refused.Add(1)
						continue
					}
					r.admitted.Add(1)
					cur := inFlight.Add(1)
					for p := r.peak.Load(); cur > p && !r.peak.CompareAndSwap(p, cur); p = r.peak.Load() {
					}
					time.Sleep(hold)
					inFlight.Add(-1)
					// Released by the other instance half the time: the
					// admission names its shards.
					if err := stores[(i+n)%len(stores)].Release(context.Background(), d.Admission); err != nil {
						t.Errorf("Release: %v", err)
					}
				}
			})
		}
	}
	wg.Wait()
	t.Logf("admitted %d, refused %d, peak in flight %d, errors %d, failed open %d",
		r.admitted.Load(), r.refused.Load(), r.peak.Load(), r.errs.Load(), r.failedOpen.Load())
	return &r
}

// hotLeaseStores returns two instances on a fresh counters table behind a
// throttler letting each item take rate write units a second.
func hotLeaseStores(t *testing.T, rate float64) []*ddblimits.Store {
	table := ddblocal.Tables(t).Counters
	th := ddblocal.NewThrottler(t, "", rate)
	stores := make([]*ddblimits.Store, 2)
	for i := range stores {
		client := dynamodb.NewFromConfig(ddblocal.ConfigAt(th.URL), func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
		stores[i] = ddblimits.New(client, table, ddblimits.Options{Timeout: 30 * time.Second, AdmitTimeout: 2 * time.Minute})
	}
	return stores
}

// hotShards returns the shards a scope's lease item records (0: cold).
func hotShards(t *testing.T, s *ddblimits.Store, sc limits.Scope) int {
	n, err := s.LeaseShards(context.Background(), sc.Kind, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func checkLeases(t *testing.T, r *leaseRun, stores []*ddblimits.Store, bound int64, scopes ...limits.Scope) {
	t.Helper()
	if r.errs.Load() != 0 || r.failedOpen.Load() != 0 {
		t.Errorf("%d errors, %d failed open: want none (throttling handled)", r.errs.Load(), r.failedOpen.Load())
	}
	if p := r.peak.Load(); p > bound {
		t.Errorf("%d requests in flight at once, bound %d", p, bound)
	}
	for _, sc := range scopes {
		n, err := stores[0].InFlight(context.Background(), sc.Kind, sc.ID, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s %s: %d leases still in force after every release", sc.Kind, sc.ID, n)
		}
		if h := hotShards(t, stores[0], sc); h < 2 {
			t.Errorf("%s %s: lease item records %d shards: the throttled scope did not turn hot", sc.Kind, sc.ID, h)
		}
	}
	if stores[0].Throttled()+stores[1].Throttled() == 0 {
		t.Error("no write was throttled: the test did not reach the ceiling")
	}
}

// Two instances of 12 goroutines each on a key and a team bounded to 16
// in flight, through a throttler letting each item take 30 write units a
// second: the lease items throttle, the scopes turn hot, and still no
// admission errs or fails open, the requests in flight (counted by the
// test) never exceed the bound, and every lease is given back, half of
// them by the other instance.
func TestHotLeasesBound(t *testing.T) {
	stores := hotLeaseStores(t, 30)
	const bound = 16
	key := limits.Scope{Kind: limits.KindKey, ID: fmt.Sprintf("hl-%d", time.Now().UnixNano()), Parallel: bound}
	team := limits.Scope{Kind: limits.KindTeam, ID: key.ID + "-team", Parallel: bound}
	r := runLeases(t, stores, key, team, 12, 10, 30*time.Millisecond)
	checkLeases(t, r, stores, bound, key, team)
	if r.admitted.Load() < bound || r.peak.Load() < bound/2 {
		t.Errorf("only %d admitted, at most %d at once", r.admitted.Load(), r.peak.Load())
	}
}

// Six goroutines on two instances, a bound of 512: the scopes turn hot
// (over at most 64 shards, each given at least 7 leases after the legacy
// of at most 5), so a shard is never full while the scope has room: no
// refusal at all (the stated tail is empty here).
func TestHotLeasesNoFalseRefusal(t *testing.T) {
	stores := hotLeaseStores(t, 30)
	const bound = 512
	key := limits.Scope{Kind: limits.KindKey, ID: fmt.Sprintf("hr-%d", time.Now().UnixNano()), Parallel: bound}
	team := limits.Scope{Kind: limits.KindTeam, ID: key.ID + "-team", Parallel: bound}
	r := runLeases(t, stores, key, team, 3, 20, time.Millisecond)
	checkLeases(t, r, stores, bound, key, team)
	if r.refused.Load() != 0 {
		t.Errorf("%d refused with at most 6 of 512 in flight", r.refused.Load())
	}
}

// The mechanics, one step at a time (no throttler: the store's rate hint,
// 20 units a second per item, turns the scope hot at its second admission
// a second): a lease taken cold (and never released: its instance
// "crashed") stays on the scope's one item as the legacy, and the shards
// share the rest of the bound; an instance that has not learned the switch
// is refused by the record and learns it; once the legacy lease expired, a
// full scope reads its shards and the legacy again, and the legacy's room
// goes to the shards; releases, from either instance, go back to the shard
// named, once.
func TestHotLeasesLegacy(t *testing.T) {
	table, client := ddblocal.Tables(t).Counters, ddblocal.Client(t)
	a := ddblimits.New(client, table, ddblimits.Options{ItemWrites: 20})
	b := ddblimits.New(ddblocal.Client(t), table, ddblimits.Options{})
	sc := limits.Scope{Kind: limits.KindKey, ID: fmt.Sprintf("hg-%d", time.Now().UnixNano()), Parallel: 16, OnError: limits.FailClosed}
	// The admitter counts its rate in wall-clock seconds: the first two
	// admissions go in one second (not across a boundary, where each
	// second would count one, and the scope would stay cold) when they
	// start at the beginning of one.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	now := time.Now()
	admit := func(s *ddblimits.Store, lease string, at time.Time, exp time.Duration) limits.Decision {
		t.Helper()
		d, err := s.Admit(context.Background(), limits.AdmitRequest{Now: at, Scopes: []limits.Scope{sc}, Lease: lease, LeaseExpires: at.Add(exp)})
		if err != nil {
			t.Fatalf("Admit %s: %v", lease, err)
		}
		return d
	}
	inFlight := func(at time.Time, want int64) {
		t.Helper()
		if n, err := a.InFlight(context.Background(), sc.Kind, sc.ID, at); err != nil || n != want {
			t.Fatalf("in flight: %d, %v; want %d", n, err, want)
		}
	}
	if d := admit(a, "crashed", now, 10*time.Second); !d.Allowed || d.Admission.Leased[0].Shard != 0 {
		t.Fatalf("the first admission: %+v, want admitted cold", d)
	}
	var held []limits.Admission
	for i := range 15 {
		d := admit(a, fmt.Sprint("h", i), now, time.Hour)
		if !d.Allowed || d.Admission.Leased[0].Shard == 0 {
			t.Fatalf("admission %d: %+v, want admitted on a shard", i, d)
		}
		held = append(held, d.Admission)
	}
	if h := hotShards(t, a, sc); h != 2 {
		t.Fatalf("the lease item records %d shards, want 2 (16/LeaseShardMin)", h)
	}
	inFlight(now, 16)
	if d := admit(a, "over", now, time.Hour); d.Allowed || d.Reason != limits.ReasonParallel {
		t.Fatalf("a 17th: %+v, want refused", d)
	}
	if d := admit(b, "cold", now, time.Hour); d.Allowed {
		t.Fatalf("an instance that has not learned the switch: %+v, want refused", d)
	}
	// The crashed lease expires: a full scope reads its shards and legacy
	// again, and the legacy's room goes to the shards.
	late := now.Add(11 * time.Second)
	d := admit(a, "late", late, time.Hour)
	if !d.Allowed || d.Admission.Leased[0].Shard == 0 {
		t.Fatalf("after the legacy lease expired: %+v, want admitted on a shard", d)
	}
	held = append(held, d.Admission)
	inFlight(late, 16)
	// Instance b, which learned the switch, takes a slot one of a's
	// releases gave back; releases cross instances, and a second one is
	// a no-op.
	if err := b.Release(context.Background(), held[0]); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(context.Background(), held[0]); err != nil {
		t.Fatal(err)
	}
	inFlight(late, 15)
	if d := admit(b, "b", late, time.Hour); !d.Allowed {
		t.Fatalf("instance b after a release: %+v, want admitted", d)
	} else {
		held[0] = d.Admission
	}
	if d := admit(a, "over2", late, time.Hour); d.Allowed {
		t.Fatalf("a double release let one more in: %+v", d)
	}
	for _, h := range held {
		if err := a.Release(context.Background(), h); err != nil {
			t.Fatal(err)
		}
	}
	inFlight(late, 0)
}
