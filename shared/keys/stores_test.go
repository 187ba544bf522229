package keys_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/keystest"
)

// TestCached: reads are served from the cache for the TTL (on an injected
// clock), not-found answers included; writes through the cache drop the entry.
func TestCached(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	shared := keys.NewMemory()
	c := keys.NewCached(shared, 5*time.Second, clock)
	h := keys.HashSecret("sk-cached")

	if _, err := c.GetKey(ctx, h); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("GetKey = %v, want ErrNotFound", err)
	}
	if err := shared.CreateKey(ctx, keys.Key{Hash: h, Settings: keys.Settings{RPMLimit: 1}}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		advance time.Duration
		write   func() error
		wantErr error
		wantRPM int64
	}{
		{"not found is cached", 4 * time.Second, nil, keys.ErrNotFound, 0},
		{"TTL passed", time.Second, nil, nil, 1},
		{"settings changed elsewhere: cached", 0, func() error {
			_, err := shared.UpdateKey(ctx, keys.Key{Hash: h, Settings: keys.Settings{RPMLimit: 2}})
			return err
		}, nil, 1},
		{"just before TTL", 5*time.Second - time.Nanosecond, nil, nil, 1},
		{"at TTL", time.Nanosecond, nil, nil, 2},
		{"write through the cache drops the entry", 0, func() error {
			_, err := c.UpdateKey(ctx, keys.Key{Hash: h, Settings: keys.Settings{RPMLimit: 3}})
			return err
		}, nil, 3},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			now = now.Add(st.advance)
			if st.write != nil {
				if err := st.write(); err != nil {
					t.Fatal(err)
				}
			}
			k, err := c.GetKey(ctx, h)
			if !errors.Is(err, st.wantErr) || (err == nil && k.RPMLimit != st.wantRPM) {
				t.Fatalf("GetKey = %+v, %v; want rpm %d, err %v", k, err, st.wantRPM, st.wantErr)
			}
		})
	}
	t.Run("teams", func(t *testing.T) {
		if err := c.Teams().Create(ctx, keys.Team{ID: "t"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetTeam(ctx, "t"); err != nil {
			t.Fatal(err)
		}
		if err := c.Block(ctx, keys.Ref{Kind: keys.KindTeam, ID: "t"}, true); err != nil {
			t.Fatal(err)
		}
		if tm, err := c.GetTeam(ctx, "t"); err != nil || !tm.Blocked {
			t.Fatalf("GetTeam after Block = %+v, %v", tm, err)
		}
	})
	// An organization is cached like a team; the writes through the cache
	// that change it (its members, a team joining it) drop it.
	t.Run("organizations", func(t *testing.T) {
		if err := c.Organizations().Create(ctx, keys.Organization{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetOrganization(ctx, "o"); err != nil {
			t.Fatal(err)
		}
		if _, err := shared.Organizations().Update(ctx, keys.Organization{ID: "o", Alias: "elsewhere"}); err != nil {
			t.Fatal(err)
		}
		if o, _ := c.GetOrganization(ctx, "o"); o.Alias != "" {
			t.Fatalf("GetOrganization within the TTL = %+v, want the cached read", o)
		}
		if err := c.AddMember(ctx, keys.Member{Group: keys.KindOrg, GroupID: "o", UserID: "u", Role: keys.OrgAdmin}); err != nil {
			t.Fatal(err)
		}
		if o, _ := c.GetOrganization(ctx, "o"); o.Role("u") != keys.OrgAdmin || o.Alias != "elsewhere" {
			t.Fatalf("GetOrganization after AddOrgMember = %+v", o)
		}
		// A membership is cached as any record (of an organization as of a
		// team); the writes through the cache drop it.
		for _, g := range []struct {
			kind       keys.Kind
			id         string
			role, next string
		}{{keys.KindOrg, "o", keys.OrgInternalUser, keys.OrgInternalUserViewer}, {keys.KindTeam, "t", keys.MemberUser, keys.MemberAdmin}} {
			m := keys.Member{Group: g.kind, GroupID: g.id, UserID: "u", Role: g.role}
			if g.kind == keys.KindTeam {
				if err := c.AddMember(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.GetMember(ctx, g.kind, g.id, "u"); err != nil {
				t.Fatal(err)
			}
			m.Role = g.next
			if _, err := shared.UpdateMember(ctx, m); err != nil {
				t.Fatal(err)
			}
			if got, _ := c.GetMember(ctx, g.kind, g.id, "u"); got.Role == g.next {
				t.Fatalf("%s GetMember within the TTL = %+v, want the cached read", g.kind, got)
			}
			if _, err := c.ApplySpend(ctx, []keys.SpendDelta{{Ref: m.Ref(), Nanos: 1e9, At: now}}); err != nil {
				t.Fatal(err)
			}
			if got, _ := c.GetMember(ctx, g.kind, g.id, "u"); got.Role != g.next || got.Spend != 1 {
				t.Fatalf("%s GetMember after ApplySpend through the cache = %+v", g.kind, got)
			}
			if err := c.RemoveMember(ctx, g.kind, g.id, "u"); err != nil {
				t.Fatal(err)
			}
			absentMember(t, c, g.kind, g.id)
		}
		if err := c.Teams().Create(ctx, keys.Team{ID: "ot", OrganizationID: "o"}); err != nil {
			t.Fatal(err)
		}
		if o, _ := c.GetOrganization(ctx, "o"); len(o.Teams) != 1 {
			t.Fatalf("GetOrganization after CreateTeam in it = %+v", o)
		}
	})
}

func absentMember(t *testing.T, c *keys.Cached, g keys.Kind, id string) {
	t.Helper()
	if got, err := c.GetMember(context.Background(), g, id, "u"); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("%s GetMember after RemoveMember through the cache = %+v, %v", g, got, err)
	}
}

// TestMemory runs the conformance suites on the memory store.
func TestMemory(t *testing.T) {
	stores := map[*testing.T]*keys.Memory{}
	keystest.Run(t, func(t *testing.T) keystest.Store {
		if m, ok := stores[t]; ok {
			return m
		}
		m := keys.NewMemory()
		stores[t] = m
		return m
	})
}

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
	if err := m.Users().Create(ctx, keys.User{ID: "u", Role: keys.RoleInternalUser, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget, Duration: "1d"}}}); err != nil {
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
	if err := m.Users().Create(ctx, keys.User{ID: "v", Role: keys.RoleInternalUser, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget, Duration: "1d"}}}); err != nil {
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

// TestCachedWritesForget: a write through Cached's Records forgets what
// this instance read of the record, within the TTL: a read after a Create
// finds the record the read before it missed, and a read after an Update
// sees the update. For each kind Records serves (a budget has no alias:
// UpdatedBy stands in).
func TestCachedWritesForget(t *testing.T) {
	t.Run("team", func(t *testing.T) {
		forgets(t, keys.Admin.Teams, keys.Reader.GetTeam, func(a string) keys.Team { return keys.Team{ID: "x", Alias: a} }, func(v keys.Team) string { return v.Alias })
	})
	t.Run("user", func(t *testing.T) {
		forgets(t, keys.Admin.Users, keys.Reader.GetUser, func(a string) keys.User { return keys.User{ID: "x", Alias: a} }, func(v keys.User) string { return v.Alias })
	})
	t.Run("end user", func(t *testing.T) {
		forgets(t, keys.Admin.EndUsers, keys.Reader.GetEndUser, func(a string) keys.EndUser { return keys.EndUser{ID: "x", Alias: a} }, func(v keys.EndUser) string { return v.Alias })
	})
	t.Run("organization", func(t *testing.T) {
		forgets(t, keys.Admin.Organizations, keys.Reader.GetOrganization, func(a string) keys.Organization { return keys.Organization{ID: "x", Alias: a} }, func(v keys.Organization) string { return v.Alias })
	})
	t.Run("budget", func(t *testing.T) {
		forgets(t, keys.Admin.Budgets, keys.Reader.GetBudget, func(a string) keys.BudgetRecord { return keys.BudgetRecord{ID: "x", UpdatedBy: a} }, func(v keys.BudgetRecord) string { return v.UpdatedBy })
	})
}

// forgets checks TestCachedWritesForget for one kind: of is its Records,
// get its read, record(a) the record "x" marked a, mark its mark.
func forgets[T any](t *testing.T, of func(keys.Admin) keys.Records[T], get func(keys.Reader, context.Context, string) (T, error), record func(a string) T, mark func(T) string) {
	ctx := context.Background()
	c := keys.NewCached(keys.NewMemory(), time.Hour, nil)
	if _, err := get(c, ctx, "x"); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("read before Create: %v, want ErrNotFound", err)
	}
	if err := of(c).Create(ctx, record("a")); err != nil {
		t.Fatal(err)
	}
	if v, err := get(c, ctx, "x"); err != nil || mark(v) != "a" {
		t.Fatalf("read after Create = %+v, %v; want a", v, err)
	}
	if _, err := of(c).Update(ctx, record("b")); err != nil {
		t.Fatal(err)
	}
	if v, err := get(c, ctx, "x"); err != nil || mark(v) != "b" {
		t.Fatalf("read after Update = %+v, %v; want b", v, err)
	}
}
