package app_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

// TestSpendSeenAtOnceOnServingInstance: the instance that served a call
// applies its cost to the key, team, user and organization it cached as
// the call ends (LiteLLM's own cache does), so a budget crossed by N calls
// refuses call N+1 on that instance while the spend events still wait in
// the queue; another instance sees the spend only when it is recorded; and
// once it is, the totals are exact (the local cost is not counted twice).
func TestSpendSeenAtOnceOnServingInstance(t *testing.T) {
	const cost = 6_000_000 // nano-USD a call: 5 prompt + 1 completion tokens at $0.001
	const n = 3            // calls before the budget is crossed
	budget := keys.USD(n*cost - cost/2)
	up, _ := upstream(t, 200)
	yaml := strictYAML(up.URL, "", false)
	for _, scope := range []string{"key", "team", "user", "organization"} {
		t.Run(scope, func(t *testing.T) {
			ctx := context.Background()
			names := ddblocal.Tables(t)
			q := sqslocal.NewQueues(t, 5*time.Second, 3)
			var clock atomic.Int64
			clock.Store(time.Now().UnixNano())
			now := func() time.Time { return time.Unix(0, clock.Load()) }
			a := instance(t, yaml, app.Settings{Tables: names, SpendQueueURL: q.URL, Now: now})
			b := instance(t, yaml, app.Settings{Tables: names, SpendQueueURL: q.URL, Now: now})
			defer a.Close(ctx)
			defer b.Close(ctx)

			with := keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}
			k := keys.Key{Hash: keys.HashSecret("sk-local"), TeamID: "t", UserID: "u"}
			if err := a.Keys.Organizations().Create(ctx, keys.Organization{ID: "o", Settings: pick(scope == "organization", with)}); err != nil {
				t.Fatal(err)
			}
			if err := a.Keys.Teams().Create(ctx, keys.Team{ID: "t", OrganizationID: "o", Settings: pick(scope == "team", with)}); err != nil {
				t.Fatal(err)
			}
			if err := a.Keys.Users().Create(ctx, keys.User{ID: "u", Role: keys.RoleInternalUser, Settings: pick(scope == "user", with)}); err != nil {
				t.Fatal(err)
			}
			k.Settings = pick(scope == "key", with)
			if err := a.Keys.CreateKey(ctx, k); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				if rec := call(t, a.Handler, ctx, "sk-local", `{"model":"m"}`); rec.Code != 200 {
					t.Fatalf("call %d on A: %d %s", i+1, rec.Code, rec.Body)
				}
			}
			// The events are in the queue, recorded nowhere yet: A refuses
			// at once, B (its spend as stored: 0) still serves.
			if rec := call(t, a.Handler, ctx, "sk-local", `{"model":"m"}`); rec.Code != 400 {
				t.Fatalf("call %d on A, past the %s's budget: %d %s; want 400 budget_exceeded", n+1, scope, rec.Code, rec.Body)
			}
			if rec := call(t, b.Handler, ctx, "sk-local", `{"model":"m"}`); rec.Code != 200 {
				t.Fatalf("call on B before the spend arrives: %d %s", rec.Code, rec.Body)
			}
			flush(ctx, a, b)
			// The spend pipeline delivers: n+1 events (A's n, B's one).
			var evs []spend.Event
			for len(evs) < n+1 {
				bodies := sqslocal.Drain(t, q.URL)
				for _, body := range bodies {
					var e spend.Event
					if err := json.Unmarshal([]byte(body), &e); err != nil {
						t.Fatal(err)
					}
					evs = append(evs, e)
				}
				if len(bodies) == 0 {
					time.Sleep(50 * time.Millisecond) // the publisher's batch still on its way
				}
			}
			if _, err := spend.NewConsumer(a.Spend, gatewaytest.Quiet()).Record(ctx, evs); err != nil {
				t.Fatal(err)
			}
			clock.Add(int64(2 * time.Second)) // past the key cache TTL
			want := int64(n+1) * cost
			got := func(g *app.Gateway) int64 {
				switch scope {
				case "key":
					r, err := g.Keys.GetKey(ctx, k.Hash)
					must(t, err)
					return keys.Nanos(r.Spend)
				case "team":
					r, err := g.Keys.GetTeam(ctx, "t")
					must(t, err)
					return keys.Nanos(r.Spend)
				case "user":
					r, err := g.Keys.GetUser(ctx, "u")
					must(t, err)
					return keys.Nanos(r.Spend)
				}
				r, err := g.Keys.GetOrganization(ctx, "o")
				must(t, err)
				return keys.Nanos(r.Spend)
			}
			if ga, gb := got(a), got(b); ga != want || gb != want {
				t.Fatalf("%s spend after the pipeline delivered: A %d, B %d nano-USD; want %d on both (%d calls of %d)", scope, ga, gb, want, n+1, cost)
			}
			for name, g := range map[string]*app.Gateway{"A": a, "B": b} {
				if rec := call(t, g.Handler, ctx, "sk-local", `{"model":"m"}`); rec.Code != 400 {
					t.Fatalf("call on %s after the spend arrived: %d %s; want 400", name, rec.Code, rec.Body)
				}
			}
		})
	}
}

func pick(yes bool, s keys.Settings) keys.Settings {
	if yes {
		return s
	}
	return keys.Settings{}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
