// Package limitstest is the conformance suite every limits.Store passes,
// unchanged, on the memory store and on DynamoDB Local.
package limitstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/conformance"
	"github.com/sluice-gw/sluice/shared/limits"
)

// Harness is one isolated backend (its own tables or its own memory).
type Harness struct {
	// NewStore returns another store instance on the same shared state, as
	// another Lambda instance would hold (for DynamoDB: a new SDK client).
	NewStore func(t *testing.T) limits.Store
	// Count returns the requests and tokens counted in a scope's shard in
	// the window holding now.
	Count func(t *testing.T, kind limits.Kind, id string, shard int, now time.Time) (requests, tokens int64)
	// Committed reads a strict-budget counter (limits.Hold); nil skips the
	// hold tests.
	Committed func(t *testing.T, counter string) int64
	// InFlight returns the leases of a scope in force at now
	// (limits.Scope.Parallel).
	InFlight func(t *testing.T, kind limits.Kind, id string, now time.Time) int64
}

// Run runs the suite; newHarness is called once per test.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	conformance.Run(t, newHarness, conformance.Cases[Harness]{
		"Invalid":              testInvalid,
		"Empty":                testEmpty,
		"RPM":                  testRPM,
		"TPM":                  testTPM,
		"AllOrNothing":         testAllOrNothing,
		"Sharded":              testSharded,
		"ConcurrentExact":      testConcurrentExact,
		"ConcurrentKeyAndTeam": testConcurrentKeyAndTeam,
		"Holds":                testHolds,
		"Parallel":             testParallel,
		"ParallelExpiry":       testParallelExpiry,
		"ParallelConcurrent":   testParallelConcurrent,
	})
}

// base is a fixed time 30 s into a minute; tests move through windows by
// changing Now, never by sleeping.
var base = time.Date(2030, 1, 2, 3, 4, 30, 0, time.UTC)

func id(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

func ctx(t *testing.T) context.Context { return conformance.Context(t) }

func admit(t *testing.T, s limits.Store, req limits.AdmitRequest) limits.Decision {
	t.Helper()
	d, err := s.Admit(ctx(t), req)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	return d
}

func wantCount(t *testing.T, h Harness, kind limits.Kind, id string, now time.Time, wantReq, wantTok int64) {
	t.Helper()
	req, tok := h.Count(t, kind, id, 0, now)
	if req != wantReq || tok != wantTok {
		t.Errorf("%s %s counted (%d requests, %d tokens), want (%d, %d)", kind, id, req, tok, wantReq, wantTok)
	}
}

func testInvalid(t *testing.T, h Harness) {
	s := h.NewStore(t)
	ok := limits.Scope{Kind: limits.KindKey, ID: "k", RPM: 1}
	for _, tt := range []struct {
		name string
		req  limits.AdmitRequest
	}{
		{"zero now", limits.AdmitRequest{Scopes: []limits.Scope{ok}}},
		{"negative tokens", limits.AdmitRequest{Now: base, Tokens: -1, Scopes: []limits.Scope{ok}}},
		{"empty id", limits.AdmitRequest{Now: base, Scopes: []limits.Scope{{Kind: limits.KindKey, RPM: 1}}}},
		{"empty kind", limits.AdmitRequest{Now: base, Scopes: []limits.Scope{{ID: "x", RPM: 1}}}},
		{"negative rpm", limits.AdmitRequest{Now: base, Scopes: []limits.Scope{{Kind: limits.KindKey, ID: "k", RPM: -1}}}},
		{"too many shards", limits.AdmitRequest{Now: base, Scopes: []limits.Scope{{Kind: limits.KindKey, ID: "k", RPM: 1000, Shards: limits.MaxShards + 1}}}},
		{"duplicate scope", limits.AdmitRequest{Now: base, Scopes: []limits.Scope{ok, ok}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := s.Admit(ctx(t), tt.req)
			if !errors.Is(err, limits.ErrInvalid) {
				t.Fatalf("Admit = %+v, %v; want ErrInvalid", d, err)
			}
			if d.Allowed {
				t.Error("invalid request allowed")
			}
		})
	}
	wantCount(t, h, limits.KindKey, "k", base, 0, 0)
}

func testEmpty(t *testing.T, h Harness) {
	s := h.NewStore(t)
	unlimited := limits.Scope{Kind: limits.KindDeployment, ID: id("d")}
	for i := range 3 {
		if d := admit(t, s, limits.AdmitRequest{Now: base, Tokens: 10, Scopes: []limits.Scope{unlimited}}); !d.Allowed {
			t.Fatalf("request %d to an unlimited scope: %+v", i, d)
		}
	}
	wantCount(t, h, unlimited.Kind, unlimited.ID, base, 0, 0)
}

func testRPM(t *testing.T, h Harness) {
	s := h.NewStore(t)
	sc := limits.Scope{Kind: limits.KindKey, ID: id("k"), RPM: 3}
	req := func(now time.Time) limits.AdmitRequest {
		return limits.AdmitRequest{Now: now, Tokens: 7, Scopes: []limits.Scope{sc}}
	}
	for i := range 3 {
		d := admit(t, s, req(base.Add(time.Duration(i)*time.Second)))
		if !d.Allowed || d.Reason != "" {
			t.Fatalf("request %d: %+v, want allowed", i, d)
		}
		if len(d.Admission.Slots) != 0 {
			t.Errorf("a scope without TPM needs no token correction: %+v", d.Admission)
		}
	}
	now := base.Add(10 * time.Second) // 40 s into the minute
	d := admit(t, s, req(now))
	if d.Allowed || d.Reason != limits.ReasonRPM || d.BlockedScope.ID != sc.ID {
		t.Fatalf("4th request: %+v, want blocked by rpm of %s", d, sc.ID)
	}
	if d.RetryAfter != 20*time.Second {
		t.Errorf("RetryAfter = %v, want 20s (the window's end)", d.RetryAfter)
	}
	wantCount(t, h, sc.Kind, sc.ID, now, 3, 21)

	// The next window starts empty; the old one is never read again.
	next := limits.WindowEnd(base)
	if d := admit(t, s, req(next)); !d.Allowed {
		t.Fatalf("first request of the next window: %+v", d)
	}
	wantCount(t, h, sc.Kind, sc.ID, next, 1, 7)
	wantCount(t, h, sc.Kind, sc.ID, base, 3, 21)
}

func testTPM(t *testing.T, h Harness) {
	s := h.NewStore(t)
	sc := limits.Scope{Kind: limits.KindModelGroup, ID: id("g"), TPM: 100}
	req := limits.AdmitRequest{Now: base, Tokens: 40, Scopes: []limits.Scope{sc}}
	first := admit(t, s, req)
	if !first.Allowed || len(first.Admission.Slots) != 1 {
		t.Fatalf("first: %+v", first)
	}
	if d := admit(t, s, req); !d.Allowed {
		t.Fatalf("second: %+v", d)
	}
	d := admit(t, s, req)
	if d.Allowed || d.Reason != limits.ReasonTPM || d.BlockedScope.ID != sc.ID {
		t.Fatalf("third (80+40 > 100): %+v, want blocked by tpm", d)
	}
	wantCount(t, h, sc.Kind, sc.ID, base, 2, 80)

	// The first call used 10 tokens, not 40: give 30 back.
	if err := s.AdjustTokens(ctx(t), first.Admission, -30); err != nil {
		t.Fatal(err)
	}
	wantCount(t, h, sc.Kind, sc.ID, base, 2, 50)
	if d := admit(t, s, req); !d.Allowed {
		t.Fatalf("after correction (50+40 <= 100): %+v", d)
	}
	// A correction upwards is unconditional.
	if err := s.AdjustTokens(ctx(t), first.Admission, 500); err != nil {
		t.Fatal(err)
	}
	wantCount(t, h, sc.Kind, sc.ID, base, 3, 590)
	if err := s.AdjustTokens(ctx(t), first.Admission, 0); err != nil {
		t.Fatal(err)
	}

	t.Run("estimate above the limit", func(t *testing.T) {
		other := limits.Scope{Kind: limits.KindModelGroup, ID: id("g"), TPM: 100}
		d := admit(t, s, limits.AdmitRequest{Now: base, Tokens: 101, Scopes: []limits.Scope{other}})
		if d.Allowed || d.Reason != limits.ReasonTPM {
			t.Fatalf("%+v, want blocked by tpm", d)
		}
		wantCount(t, h, other.Kind, other.ID, base, 0, 0)
	})
}

func testAllOrNothing(t *testing.T, h Harness) {
	s := h.NewStore(t)
	wide := limits.Scope{Kind: limits.KindUser, ID: id("u"), RPM: 10, TPM: 1000}
	narrow := limits.Scope{Kind: limits.KindDeployment, ID: id("d"), RPM: 1}
	req := limits.AdmitRequest{Now: base, Tokens: 5, Scopes: []limits.Scope{wide, narrow}}
	if d := admit(t, s, req); !d.Allowed {
		t.Fatalf("first: %+v", d)
	}
	for i := range 3 {
		d := admit(t, s, req)
		if d.Allowed || d.Reason != limits.ReasonRPM || d.BlockedScope.ID != narrow.ID || d.BlockedScope.Kind != narrow.Kind {
			t.Fatalf("request %d: %+v, want blocked by %s", i, d, narrow.ID)
		}
	}
	wantCount(t, h, wide.Kind, wide.ID, base, 1, 5)
	wantCount(t, h, narrow.Kind, narrow.ID, base, 1, 5)
}

func run(t *testing.T, stores []limits.Store, perStore int, req limits.AdmitRequest) int64 {
	t.Helper()
	var (
		allowed atomic.Int64
		wg      sync.WaitGroup
		errs    = make(chan error, len(stores)*perStore)
		start   = make(chan struct{})
	)
	for _, s := range stores {
		for range perStore {
			wg.Go(func() {
				<-start
				d, err := s.Admit(context.Background(), req)
				switch {
				case err != nil:
					errs <- err
				case d.FailedOpen:
					errs <- errors.New("failed open")
				case d.Allowed:
					allowed.Add(1)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Admit: %v", err)
	}
	return allowed.Load()
}

func instances(t *testing.T, h Harness, n int) []limits.Store {
	stores := make([]limits.Store, n)
	for i := range stores {
		stores[i] = h.NewStore(t)
	}
	return stores
}

func testConcurrentExact(t *testing.T, h Harness) {
	sc := limits.Scope{Kind: limits.KindDeployment, ID: id("d"), RPM: 100, OnError: limits.FailClosed}
	got := run(t, instances(t, h, 8), 64, limits.AdmitRequest{Now: base, Tokens: 3, Scopes: []limits.Scope{sc}})
	if got != 100 {
		t.Errorf("8 instances x 64 goroutines admitted %d, want exactly 100", got)
	}
	wantCount(t, h, sc.Kind, sc.ID, base, 100, 300)
}

func testConcurrentKeyAndTeam(t *testing.T, h Harness) {
	teamScope := limits.Scope{Kind: limits.KindTeam, ID: id("team"), RPM: 150, OnError: limits.FailClosed}
	keyScope := limits.Scope{Kind: limits.KindKey, ID: id("key"), RPM: 100, OnError: limits.FailClosed}

	// Another key of the team has already used 80 of the team's 150.
	other := limits.Scope{Kind: limits.KindKey, ID: id("other"), RPM: 1000}
	s := h.NewStore(t)
	for i := range 80 {
		if d := admit(t, s, limits.AdmitRequest{Now: base, Scopes: []limits.Scope{other, teamScope}}); !d.Allowed {
			t.Fatalf("warm-up %d: %+v", i, d)
		}
	}

	req := limits.AdmitRequest{
		Now:    base,
		Scopes: []limits.Scope{keyScope, teamScope},
	}
	got := run(t, instances(t, h, 8), 64, req)
	if got != 70 {
		t.Errorf("admitted %d, want exactly 70 (the team's room)", got)
	}
	// Requests the team rejected left the key's counter unchanged, and the
	// other way round.
	wantCount(t, h, keyScope.Kind, keyScope.ID, base, 70, 0)
	wantCount(t, h, teamScope.Kind, teamScope.ID, base, 150, 0)
}

func testSharded(t *testing.T, h Harness) {
	sc := limits.Scope{Kind: limits.KindModelGroup, ID: id("g"), RPM: 100, TPM: 1000, Shards: 4, OnError: limits.FailClosed}
	got := run(t, instances(t, h, 3), 100, limits.AdmitRequest{Now: base, Tokens: 2, Scopes: []limits.Scope{sc}})
	if got != 100 {
		t.Errorf("admitted %d over 4 shards, want exactly 100", got)
	}
	var sumReq, sumTok int64
	for shard := range 4 {
		req, tok := h.Count(t, sc.Kind, sc.ID, shard, base)
		if want := limits.ShardCap(sc.RPM, 4, shard); req > want {
			t.Errorf("shard %d counted %d requests, above its cap %d", shard, req, want)
		}
		sumReq, sumTok = sumReq+req, sumTok+tok
	}
	if sumReq != got || sumTok != 2*got {
		t.Errorf("shards hold (%d requests, %d tokens), want (%d, %d)", sumReq, sumTok, got, 2*got)
	}
	if req, _ := h.Count(t, sc.Kind, sc.ID, 4, base); req != 0 {
		t.Errorf("a 5th shard holds %d requests", req)
	}
}
