package keys_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// TestSpentLocally: a cost shown at once on the serving instance counts in
// its budget period, is shown once whatever the store receives (not twice
// once recorded, not after a reset of the stored spend), and costs a warm
// read no allocation.
func TestSpentLocally(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	m := keys.NewMemory()
	c := keys.NewCached(m, time.Second, func() time.Time { return now })
	budget := 1.0
	if err := m.CreateUser(ctx, keys.User{ID: "u", Role: keys.RoleInternalUser, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget, Duration: "1d"}}}); err != nil {
		t.Fatal(err)
	}
	spent := func() (int64, int64) {
		t.Helper()
		u, err := c.GetUser(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		return keys.Nanos(u.Spend), keys.Nanos(u.Current(now))
	}
	spent() // read: the instance has the record
	c.SpentLocally("", "", "u", "", 300, now)
	c.SpentLocally("", "", "u", "", 200, now)
	if life, cur := spent(); life != 500 || cur != 500 {
		t.Fatalf("after 2 local costs: spend %d, period spend %d; want 500, 500", life, cur)
	}
	// The first cost is recorded; the cache expires: the second still shows, once.
	if _, err := m.ApplySpend(ctx, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindUser, ID: "u"}, Nanos: 300, At: now}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if life, cur := spent(); life != 500 || cur != 500 {
		t.Fatalf("one cost recorded: spend %d, period spend %d; want 500, 500", life, cur)
	}
	// Both recorded, plus another instance's 1000: the store's alone.
	if _, err := m.ApplySpend(ctx, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindUser, ID: "u"}, Nanos: 1200, At: now}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if life, cur := spent(); life != 1500 || cur != 1500 {
		t.Fatalf("all recorded: spend %d, period spend %d; want 1500, 1500", life, cur)
	}
	// A reset of the stored spend drops what is pending.
	c.SpentLocally("", "", "u", "", 700, now)
	if err := c.SetSpend(ctx, keys.Ref{Kind: keys.KindUser, ID: "u"}, 0, now); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if life, _ := spent(); life != 0 {
		t.Fatalf("after a reset to 0: spend %d", life)
	}
	// A cost of yesterday's period does not count in today's.
	c.SpentLocally("", "", "u", "", 900, now.Add(-24*time.Hour))
	if life, cur := spent(); life != 900 || cur != 0 {
		t.Fatalf("a cost of the previous period: spend %d, period spend %d; want 900, 0", life, cur)
	}
	// Warm reads and local costs allocate nothing more.
	if err := m.CreateUser(ctx, keys.User{ID: "v", Role: keys.RoleInternalUser, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget, Duration: "1d"}}}); err != nil {
		t.Fatal(err)
	}
	plain := testing.AllocsPerRun(100, func() { _, _ = c.GetUser(ctx, "v") })
	withPending := testing.AllocsPerRun(100, func() {
		c.SpentLocally("", "", "u", "", 1, now)
		_, _ = c.GetUser(ctx, "u")
	})
	if withPending > plain {
		t.Fatalf("a warm read with a local cost allocates %v, a plain one %v", withPending, plain)
	}
}
