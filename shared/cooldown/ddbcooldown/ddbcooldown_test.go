package ddbcooldown_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/cooldown/cooldowntest"
	"github.com/sluice-gw/sluice/shared/cooldown/ddbcooldown"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// TestSharedBetweenInstances: two gateway instances, each with its own SDK
// client and its own caching view. Instance A sees the failures; instance B
// skips the deployment on its first read after its cached read expires, and
// not before (the TTL is honoured). Reads inside the TTL make no DynamoDB
// call.
func TestSharedBetweenInstances(t *testing.T) {
	table := ddblocal.Tables(t).Counters
	clk := cooldowntest.NewClock(time.Date(2030, 1, 2, 3, 4, 10, 0, time.UTC))
	const ttl = 2 * time.Second
	newInstance := func() *cooldown.Cached {
		return cooldown.NewCached(ddbcooldown.New(ddblocal.Client(t), table, ddbcooldown.Options{}),
			cooldown.CachedOptions{TTL: ttl, Now: clk.Now})
	}
	a, b := newInstance(), newInstance()
	ids := []string{"dep-1", "dep-2"}
	readIDs := func(s cooldown.Store, ids []string) (map[string]time.Time, int) {
		t.Helper()
		ctx, count := ddb.WithCallCount(context.Background())
		got, err := s.CoolingDown(ctx, ids, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		return got, count.Calls()
	}
	read := func(s cooldown.Store) (map[string]time.Time, int) { t.Helper(); return readIDs(s, ids) }

	if got, calls := read(b); len(got) != 0 || calls != 1 {
		t.Fatalf("B's first read: %v with %d calls, want none cooling with 1 call", got, calls)
	}
	if got, calls := read(b); len(got) != 0 || calls != 0 {
		t.Fatalf("B's cached read: %v with %d calls, want 0 calls", got, calls)
	}

	// A sees three failures of dep-1 with two allowed: it cools at once on A.
	var until time.Time
	for i := range 3 {
		u, err := a.RecordFailure(context.Background(), cooldown.Failure{
			Deployment: "dep-1", Class: "server_error", At: clk.Now(), Allowed: 2,
			Window: time.Minute, Cooldown: 30 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		until = u
		if i < 2 && !u.IsZero() {
			t.Fatalf("failure %d cooled", i+1)
		}
	}
	if until.IsZero() {
		t.Fatal("third failure did not cool dep-1")
	}
	if got, calls := readIDs(a, ids[:1]); !got["dep-1"].Equal(until) || len(got) != 1 || calls != 0 {
		t.Fatalf("A: %v with %d calls, want dep-1 until %v from its own record, no call", got, calls, until)
	}

	// B still serves its cached read until the TTL has passed.
	clk.Advance(ttl - time.Millisecond)
	if got, calls := read(b); len(got) != 0 || calls != 0 {
		t.Fatalf("B within TTL: %v with %d calls, want its cached answer", got, calls)
	}
	clk.Advance(time.Millisecond)
	if got, calls := read(b); !got["dep-1"].Equal(until) || len(got) != 1 || calls != 1 {
		t.Fatalf("B after TTL: %v with %d calls, want dep-1 until %v with 1 call", got, calls, until)
	}

	// Expiry is compared on read: past until, nobody cools it.
	clk.Advance(31 * time.Second)
	for name, s := range map[string]cooldown.Store{"A": a, "B": b} {
		if got, _ := read(s); len(got) != 0 {
			t.Errorf("%s after the cooldown: %v", name, got)
		}
	}
}

// TestSharedStoreDown: with DynamoDB unreachable, a failure this instance
// sees still cools the deployment here, and no call hangs.
func TestSharedStoreDown(t *testing.T) {
	shared := ddbcooldown.New(ddb.NewClient(ddblocal.ConfigAt(ddblocal.Refused(t)), ddb.ClientOptions{MaxAttempts: 1}), "counters", ddbcooldown.Options{Timeout: time.Second})
	c := cooldown.NewCached(shared, cooldown.CachedOptions{TTL: time.Second})
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	if _, err := shared.CoolingDown(context.Background(), []string{"d"}, now); err == nil {
		t.Fatal("unreachable store answered")
	}
	u, err := c.RecordFailure(context.Background(), cooldown.Failure{Deployment: "d", At: now, Immediate: true, Cooldown: time.Minute})
	if err != nil || !u.Equal(now.Add(time.Minute)) {
		t.Fatalf("RecordFailure = %v, %v; want local cooldown until %v", u, err, now.Add(time.Minute))
	}
	got, err := c.CoolingDown(context.Background(), []string{"d", "e"}, now)
	if err != nil || len(got) != 1 || !got["d"].Equal(u) {
		t.Fatalf("CoolingDown = %v, %v; want d until %v", got, err, u)
	}
}
