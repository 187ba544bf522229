// Package cooldowntest is the conformance suite every cooldown.Store
// passes, unchanged, on the memory store and on DynamoDB Local.
package cooldowntest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/conformance"
	"github.com/sluice-gw/sluice/shared/cooldown"
)

// Run runs the suite, each case on the open function newState makes for
// it (see conformance.Cases).
func Run(t *testing.T, newState func(t *testing.T) (open func() cooldown.Store)) {
	conformance.Run(t, newState, conformance.Cases[func() cooldown.Store]{
		"Invalid":         testInvalid,
		"AllowedFails":    testAllowedFails,
		"Immediate":       testImmediate,
		"Windows":         testWindows,
		"Classes":         testClasses,
		"NeverShortened":  testNeverShortened,
		"Shared":          testShared,
		"ConcurrentExact": testConcurrentExact,
		"ManyIDs":         testManyIDs,
	})
}

// base is 10 s into a minute; tests move the clock by changing times.
var base = time.Date(2030, 1, 2, 3, 4, 10, 0, time.UTC)

func ctx(t *testing.T) context.Context { return conformance.Context(t) }

func dep() string { return conformance.ID("dep") }

func failure(d string, at time.Time, allowed int) cooldown.Failure {
	return cooldown.Failure{Deployment: d, Class: "server_error", At: at, Allowed: allowed, Window: time.Minute, Cooldown: 30 * time.Second}
}

func record(t *testing.T, s cooldown.Store, f cooldown.Failure) time.Time {
	t.Helper()
	u, err := s.RecordFailure(ctx(t), f)
	if err != nil {
		t.Fatalf("RecordFailure(%+v): %v", f, err)
	}
	return u
}

func cooling(t *testing.T, s cooldown.Store, ids []string, now time.Time) map[string]time.Time {
	t.Helper()
	m, err := s.CoolingDown(ctx(t), ids, now)
	if err != nil {
		t.Fatalf("CoolingDown: %v", err)
	}
	return m
}

func testInvalid(t *testing.T, open func() cooldown.Store) {
	s := open()
	ok := failure("d", base, 0)
	for _, tt := range []struct {
		name string
		edit func(*cooldown.Failure)
	}{
		{"empty deployment", func(f *cooldown.Failure) { f.Deployment = "" }},
		{"zero time", func(f *cooldown.Failure) { f.At = time.Time{} }},
		{"zero cooldown", func(f *cooldown.Failure) { f.Cooldown = 0 }},
		{"zero window", func(f *cooldown.Failure) { f.Window = 0 }},
		{"negative allowed", func(f *cooldown.Failure) { f.Allowed = -1 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := ok
			tt.edit(&f)
			if _, err := s.RecordFailure(ctx(t), f); !errors.Is(err, cooldown.ErrInvalid) {
				t.Fatalf("%v, want ErrInvalid", err)
			}
		})
	}
	if got := cooling(t, s, []string{"d"}, base); len(got) != 0 {
		t.Fatalf("invalid failures cooled: %v", got)
	}
}

func testAllowedFails(t *testing.T, open func() cooldown.Store) {
	s, d := open(), dep()
	for i := range 2 {
		if u := record(t, s, failure(d, base.Add(time.Duration(i)*time.Second), 2)); !u.IsZero() {
			t.Fatalf("failure %d of 2 allowed cooled until %v", i+1, u)
		}
		if got := cooling(t, s, []string{d}, base); len(got) != 0 {
			t.Fatalf("cooling after %d allowed failures: %v", i+1, got)
		}
	}
	at := base.Add(5 * time.Second)
	want := at.Add(30 * time.Second)
	if u := record(t, s, failure(d, at, 2)); !u.Equal(want) {
		t.Fatalf("3rd failure: until %v, want %v", u, want)
	}
	for _, tt := range []struct {
		now  time.Time
		want bool
	}{{at, true}, {want.Add(-time.Millisecond), true}, {want, false}, {want.Add(time.Hour), false}} {
		got := cooling(t, s, []string{d, "other"}, tt.now)
		if u, ok := got[d]; ok != tt.want || (ok && !u.Equal(want)) || len(got) > 1 {
			t.Errorf("CoolingDown at %v = %v, want cooling %v until %v", tt.now, got, tt.want, want)
		}
	}
	// A failure while cooling returns the running cooldown.
	if u := record(t, s, failure(d, at.Add(time.Second), 1000)); !u.Equal(want) {
		t.Errorf("failure while cooling returned %v, want %v", u, want)
	}
}

func testImmediate(t *testing.T, open func() cooldown.Store) {
	s, d := open(), dep()
	f := failure(d, base, 100)
	f.Class, f.Immediate, f.Window = "rate_limited", true, 0
	want := base.Add(f.Cooldown)
	if u := record(t, s, f); !u.Equal(want) {
		t.Fatalf("immediate: until %v, want %v", u, want)
	}
	if got := cooling(t, s, []string{d}, base.Add(time.Second)); !got[d].Equal(want) {
		t.Fatalf("CoolingDown = %v", got)
	}
}

func testWindows(t *testing.T, open func() cooldown.Store) {
	s, d := open(), dep()
	// One failure allowed per minute: one in each of three windows never cools.
	for i := range 3 {
		if u := record(t, s, failure(d, base.Add(time.Duration(i)*time.Minute), 1)); !u.IsZero() {
			t.Fatalf("failure in window %d cooled until %v", i, u)
		}
	}
	// A late failure from an older window is not counted in the current one.
	if u := record(t, s, failure(d, base, 1)); !u.IsZero() {
		t.Fatalf("late failure cooled until %v", u)
	}
	// A second failure in the current window cools.
	at := base.Add(2*time.Minute + time.Second)
	if u := record(t, s, failure(d, at, 1)); !u.Equal(at.Add(30 * time.Second)) {
		t.Fatalf("second failure in a window: until %v", u)
	}
}

func testClasses(t *testing.T, open func() cooldown.Store) {
	s, d := open(), dep()
	for _, class := range []string{"timeout", "server_error", "rate_limited"} {
		f := failure(d, base, 1)
		f.Class = class
		if u := record(t, s, f); !u.IsZero() {
			t.Fatalf("first %s failure cooled", class)
		}
	}
}

func testNeverShortened(t *testing.T, open func() cooldown.Store) {
	s, d := open(), dep()
	long := failure(d, base, 0)
	long.Cooldown = time.Hour
	short := failure(d, base.Add(time.Second), 0)
	short.Cooldown = time.Second
	want := base.Add(time.Hour)
	record(t, s, long)
	if u := record(t, s, short); !u.Equal(want) {
		t.Fatalf("shorter cooldown: until %v, want %v", u, want)
	}
	if got := cooling(t, s, []string{d}, base.Add(time.Minute)); !got[d].Equal(want) {
		t.Fatalf("CoolingDown = %v, want until %v", got, want)
	}
	// A later end extends it.
	ext := failure(d, base.Add(30*time.Minute), 0)
	ext.Cooldown = time.Hour
	if u := record(t, s, ext); !u.Equal(base.Add(90 * time.Minute)) {
		t.Fatalf("extension: until %v", u)
	}
}

func testShared(t *testing.T, open func() cooldown.Store) {
	a, b, d := open(), open(), dep()
	if got := cooling(t, b, []string{d}, base); len(got) != 0 {
		t.Fatalf("cooling before any failure: %v", got)
	}
	for i := range 3 {
		record(t, a, failure(d, base.Add(time.Duration(i)*time.Second), 2))
	}
	if got := cooling(t, b, []string{d}, base.Add(3*time.Second)); !got[d].Equal(base.Add(32 * time.Second)) {
		t.Fatalf("other instance sees %v, want cooling until %v", got, base.Add(32*time.Second))
	}
}

func testConcurrentExact(t *testing.T, open func() cooldown.Store) {
	const instances, perInstance = 4, 16 // 64 failures
	for _, tt := range []struct {
		allowed int
		cooling bool
	}{{63, true}, {64, false}} {
		t.Run(fmt.Sprintf("allowed %d", tt.allowed), func(t *testing.T) {
			d := dep()
			var wg sync.WaitGroup
			for range instances {
				s := open()
				for range perInstance {
					wg.Go(func() {
						if _, err := s.RecordFailure(context.Background(), failure(d, base, tt.allowed)); err != nil {
							t.Errorf("RecordFailure: %v", err)
						}
					})
				}
			}
			wg.Wait()
			_, got := cooling(t, open(), []string{d}, base)[d]
			if got != tt.cooling {
				t.Errorf("64 failures, %d allowed: cooling = %v, want %v", tt.allowed, got, tt.cooling)
			}
		})
	}
}

func testManyIDs(t *testing.T, open func() cooldown.Store) {
	s := open()
	if got := cooling(t, s, nil, base); len(got) != 0 {
		t.Fatalf("no ids: %v", got)
	}
	var ids []string
	want := map[string]bool{}
	for i := range 250 {
		d := fmt.Sprintf("many-%03d-%s", i, dep())
		ids = append(ids, d)
		if i%7 == 0 {
			record(t, s, failure(d, base, 0))
			want[d] = true
		}
	}
	got := cooling(t, s, ids, base)
	if len(got) != len(want) {
		t.Fatalf("%d cooling, want %d", len(got), len(want))
	}
	for d := range want {
		if _, ok := got[d]; !ok {
			t.Errorf("%s not cooling", d)
		}
	}
}
