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
		if err := c.CreateTeam(ctx, keys.Team{ID: "t"}); err != nil {
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
		if err := c.CreateOrganization(ctx, keys.Organization{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetOrganization(ctx, "o"); err != nil {
			t.Fatal(err)
		}
		if _, err := shared.UpdateOrganization(ctx, keys.Organization{ID: "o", Alias: "elsewhere"}); err != nil {
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
		if err := c.CreateTeam(ctx, keys.Team{ID: "ot", OrganizationID: "o"}); err != nil {
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
