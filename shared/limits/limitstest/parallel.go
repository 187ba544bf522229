package limitstest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/limits"
)

// Parallel-request limits (limits/parallel.go).

// leaseReq is an admission taking lease id on scopes, expiring an hour
// after base.
func leaseReq(lease string, scopes ...limits.Scope) limits.AdmitRequest {
	return limits.AdmitRequest{Now: base, Scopes: scopes, Lease: lease, LeaseExpires: base.Add(time.Hour)}
}

func release(t *testing.T, s limits.Store, a limits.Admission) {
	t.Helper()
	if err := s.Release(ctx(t), a); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

func wantInFlight(t *testing.T, h Harness, sc limits.Scope, now time.Time, want int64) {
	t.Helper()
	if got := h.InFlight(t, sc.Kind, sc.ID, now); got != want {
		t.Errorf("%s %s has %d leases in force, want %d", sc.Kind, sc.ID, got, want)
	}
}

// A bound of 2 admits two, refuses the third until one is released; a
// second release of the same lease gives nothing back; a refusal by
// another scope takes no lease.
func testParallel(t *testing.T, h Harness) {
	s := h.NewStore(t)
	sc := limits.Scope{Kind: limits.KindKey, ID: id("k"), Parallel: 2, OnError: limits.FailClosed}
	if d, err := s.Admit(ctx(t), limits.AdmitRequest{Now: base, Scopes: []limits.Scope{sc}}); err == nil {
		t.Fatalf("an admission with a parallel bound and no lease: %+v", d)
	}
	a := admit(t, s, leaseReq("a", sc))
	b := admit(t, s, leaseReq("b", sc))
	if !a.Allowed || !b.Allowed {
		t.Fatalf("first two: %+v, %+v", a, b)
	}
	if len(a.Admission.Leased) != 1 || a.Admission.Lease != "a" {
		t.Fatalf("admission %+v does not name its lease", a.Admission)
	}
	c := admit(t, s, leaseReq("c", sc))
	if c.Allowed || c.Reason != limits.ReasonParallel || c.BlockedScope.ID != sc.ID {
		t.Fatalf("third: %+v, want refused by the parallel bound", c)
	}
	wantInFlight(t, h, sc, base, 2)
	release(t, s, a.Admission)
	release(t, s, a.Admission) // idempotent: gives nothing back twice
	wantInFlight(t, h, sc, base, 1)
	if d := admit(t, s, leaseReq("d", sc)); !d.Allowed {
		t.Fatalf("after a release: %+v", d)
	}
	if d := admit(t, s, leaseReq("e", sc)); d.Allowed {
		t.Fatalf("a double release let a third in: %+v", d)
	}

	// All or nothing with a per-minute scope: the one refused by RPM takes
	// no lease.
	team := limits.Scope{Kind: limits.KindTeam, ID: id("t"), Parallel: 5}
	rpm := limits.Scope{Kind: limits.KindDeployment, ID: id("dep"), RPM: 1}
	if d := admit(t, s, leaseReq("f", team, rpm)); !d.Allowed {
		t.Fatalf("team and deployment: %+v", d)
	}
	if d := admit(t, s, leaseReq("g", team, rpm)); d.Allowed || d.Reason != limits.ReasonRPM {
		t.Fatalf("second: %+v, want refused by rpm", d)
	}
	wantInFlight(t, h, team, base, 1)
	wantCount(t, h, rpm.Kind, rpm.ID, base, 1, 0)
}

// A lease never released (a crashed instance) stops counting at its
// expiry: the next admission reclaims it.
func testParallelExpiry(t *testing.T, h Harness) {
	s := h.NewStore(t)
	sc := limits.Scope{Kind: limits.KindUser, ID: id("u"), Parallel: 1}
	crashed := limits.AdmitRequest{Now: base, Scopes: []limits.Scope{sc}, Lease: "crashed", LeaseExpires: base.Add(10 * time.Second)}
	if d := admit(t, s, crashed); !d.Allowed {
		t.Fatalf("first: %+v", d)
	}
	early := limits.AdmitRequest{Now: base.Add(5 * time.Second), Scopes: []limits.Scope{sc}, Lease: "early", LeaseExpires: base.Add(time.Hour)}
	if d := admit(t, s, early); d.Allowed || d.Reason != limits.ReasonParallel {
		t.Fatalf("before the lease expired: %+v, want refused", d)
	}
	late := limits.AdmitRequest{Now: base.Add(11 * time.Second), Scopes: []limits.Scope{sc}, Lease: "late", LeaseExpires: base.Add(time.Hour)}
	d := admit(t, s, late)
	if !d.Allowed {
		t.Fatalf("after the lease expired: %+v, want admitted", d)
	}
	wantInFlight(t, h, sc, late.Now, 1)
	// The crashed request's late release does not free the new lease.
	release(t, s, limits.Admission{Lease: "crashed", Leased: d.Admission.Leased})
	wantInFlight(t, h, sc, late.Now, 1)
	if d := admit(t, s, limits.AdmitRequest{Now: late.Now, Scopes: []limits.Scope{sc}, Lease: "more", LeaseExpires: base.Add(time.Hour)}); d.Allowed {
		t.Fatalf("a stale release freed a live lease: %+v", d)
	}
	release(t, s, d.Admission)
	wantInFlight(t, h, sc, late.Now, 0)
}

// Many goroutines on two instances admit, hold and release: the requests
// in flight, counted by the test between admission and release, never
// exceed the bound, and every lease is given back.
func testParallelConcurrent(t *testing.T, h Harness) {
	const bound, workers, rounds = 3, 16, 4
	sc := limits.Scope{Kind: limits.KindKey, ID: id("k"), Parallel: bound, OnError: limits.FailClosed}
	stores := instances(t, h, 2)
	var (
		inFlight, peak, admitted atomic.Int64
		wg                       sync.WaitGroup
		start                    = make(chan struct{})
	)
	for w := range workers {
		s := stores[w%2]
		wg.Go(func() {
			<-start
			for r := range rounds {
				d, err := s.Admit(context.Background(), leaseReq(strconv.Itoa(w)+"."+strconv.Itoa(r), sc))
				if err != nil {
					t.Errorf("Admit: %v", err)
					return
				}
				if !d.Allowed {
					continue
				}
				admitted.Add(1)
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(time.Millisecond)
				inFlight.Add(-1)
				if err := s.Release(context.Background(), d.Admission); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if p := peak.Load(); p > bound {
		t.Errorf("%d requests in flight at once, bound %d", p, bound)
	}
	if admitted.Load() < bound {
		t.Errorf("only %d admitted", admitted.Load())
	}
	wantInFlight(t, h, sc, base, 0)
}
