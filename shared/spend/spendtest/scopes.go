package spendtest

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// Cases of the scopes beyond keys, teams and users: organizations, model
// budgets and end users.

// orgWorld is a World whose team 0 belongs to a new organization: the
// organization's id, and the events of the world's keys naming it as the
// gateway does (VersionOrg) for the keys of that team.
func orgWorld(t *testing.T, h Harness, nKeys, nEndUsers int) (*World, string) {
	t.Helper()
	c := context.Background()
	w := NewWorld(t, h.Keys, nKeys, nEndUsers)
	org := ID("org")
	if err := h.Keys.Organizations().Create(c, keys.Organization{ID: org}); err != nil {
		t.Fatal(err)
	}
	team, err := h.Keys.GetTeam(c, w.Teams[0])
	if err != nil {
		t.Fatal(err)
	}
	team.OrganizationID = org
	if _, err := h.Keys.Teams().Update(c, team); err != nil {
		t.Fatal(err)
	}
	return w, org
}

// withOrg names org on the events of team's keys.
func withOrg(evs []spend.Event, team, org string) {
	for i := range evs {
		if evs[i].TeamID == team {
			evs[i].Version, evs[i].OrganizationID = spend.VersionOrg, org
		}
	}
}

// testOrgRollup: an event of a team in an organization adds its cost to
// the organization's record exactly once, whatever the redeliveries and
// concurrent consumers, and the logs, daily rows and totals filter by the
// organization.
func testOrgRollup(t *testing.T, h Harness) {
	c := ctx(t)
	w, org := orgWorld(t, h, 4, 2)
	now := time.Now().UTC()
	evs := RandomEvents(w, 120, now, mrand.New(mrand.NewPCG(7, 21)))
	withOrg(evs, w.Teams[0], org)
	var inOrg int64
	var orgLogs int
	for i := range evs {
		if evs[i].OrganizationID == org {
			inOrg += evs[i].Nanos()
			orgLogs++
		}
	}
	if orgLogs == 0 || orgLogs == len(evs) || inOrg == 0 {
		t.Fatalf("test bug: %d of %d events in the organization", orgLogs, len(evs))
	}
	// Three consumers, each recording every event in its own order and
	// batches, and one of them twice (a redelivery).
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := range 3 {
		st := h.Store
		if i == 1 {
			st = h.Other(t)
		}
		mine := slices.Clone(evs)
		if i == 2 {
			mine = append(mine, evs...)
		}
		rr := mrand.New(mrand.NewPCG(uint64(i), 3))
		rr.Shuffle(len(mine), func(a, b int) { mine[a], mine[b] = mine[b], mine[a] })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(mine) > 0 {
				n := min(len(mine), 1+rr.IntN(40))
				if _, err := st.Record(c, mine[:n]); err != nil {
					errs <- err
					return
				}
				mine = mine[n:]
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := Sum(evs)
	orgRef := keys.Ref{Kind: keys.KindOrg, ID: org}
	if want.Refs[orgRef] != inOrg {
		t.Fatalf("test bug: Sum gives the organization %d, want %d", want.Refs[orgRef], inOrg)
	}
	if got := RecordSpend(t, h.Keys, orgRef); got != inOrg {
		t.Errorf("organization spend = %d nano-USD, want %d (its events' costs, once each)", got, inOrg)
	}
	Check(t, h.Store, h.Keys, want, now.Add(-2*time.Hour), now)

	// Reports by organization.
	logs, err := h.Store.Logs(c, spend.LogQuery{OrgID: org, From: now.Add(-2 * time.Hour), To: now.Add(time.Hour), Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != orgLogs {
		t.Errorf("logs of the organization: %d, want %d", len(logs), orgLogs)
	}
	for _, l := range logs {
		if l.OrganizationID != org || l.TeamID != w.Teams[0] || l.Version != spend.VersionOrg {
			t.Fatalf("log of the organization: %+v", l)
		}
	}
	rows, err := h.Store.Daily(c, spend.DailyQuery{OrgID: org, From: now.Add(-2 * time.Hour), To: now})
	if err != nil {
		t.Fatal(err)
	}
	var rowSpend int64
	for _, r := range rows {
		if r.OrgID != org || r.TeamID != w.Teams[0] {
			t.Fatalf("daily row of the organization: %+v", r)
		}
		rowSpend += r.Spend
	}
	if rowSpend != inOrg {
		t.Errorf("daily rows of the organization add up to %d, want %d", rowSpend, inOrg)
	}
	tots, err := h.Store.Totals(c, spend.TotalsQuery{From: now.Add(-2 * time.Hour), To: now, By: spend.ByOrg})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, tot := range tots {
		got[tot.ID] = tot.Spend
	}
	if got[org] != inOrg || len(got) != 2 {
		t.Errorf("totals by organization: %v, want %s: %d and \"\" for the rest", got, org, inOrg)
	}
}

// testModelBudgetSpend: many goroutines on two consumer instances record
// the events of one key with a model_max_budget, each of them every event
// (all but the first copy redeliveries), in their own orders and batches; the key's spend on the
// budgeted model is exactly the sum of that model's events, recorded in
// the events' transactions (once each), and the other model gets no entry.
func testModelBudgetSpend(t *testing.T, h Harness) {
	c := ctx(t)
	k := keys.Key{Hash: keys.HashSecret(ID("sk")), Settings: keys.Settings{
		ModelMaxBudget: map[string]keys.ModelBudget{"gpt-4o": {Limit: 1 << 50}},
	}}
	if err := h.Keys.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	r := mrand.New(mrand.NewPCG(3, 4))
	evs := make([]spend.Event, 120)
	var want, total int64
	for i := range evs {
		e := Event(&k, "", now.Add(-time.Duration(r.IntN(600_000))*time.Millisecond), 1+r.Int64N(5_000_000))
		e.ModelGroup = []string{"gpt-4o", "gpt-4o-mini"}[r.IntN(2)]
		if e.ModelGroup == "gpt-4o" {
			want += e.Cost
		}
		total += e.Cost
		evs[i] = e
	}
	const workers = 6
	var wg sync.WaitGroup
	for i := range workers {
		st := h.Store
		if i%2 == 1 {
			st = h.Other(t)
		}
		mine := slices.Clone(evs) // every worker records every event: all but one copy are redeliveries
		rr := mrand.New(mrand.NewPCG(uint64(i), 7))
		rr.Shuffle(len(mine), func(a, b int) { mine[a], mine[b] = mine[b], mine[a] })
		wg.Go(func() { recordAll(c, t, st, mine, rr) })
	}
	wg.Wait()
	got, err := h.Keys.GetKey(c, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if s := got.ModelSpend["gpt-4o"]; s.Spend != want || !s.PeriodStart.IsZero() {
		t.Errorf("gpt-4o spend = %d from %v, want %d (the lifetime)", s.Spend, s.PeriodStart, want)
	}
	if _, ok := got.ModelSpend["gpt-4o-mini"]; ok || len(got.ModelSpend) != 1 {
		t.Errorf("model spend = %v, want gpt-4o only", got.ModelSpend)
	}
	if keys.Nanos(got.Spend) != total {
		t.Errorf("key spend = %v, want %d nano-USD", got.Spend, total)
	}
}

// recordAll records evs through st in random batches.
func recordAll(c context.Context, t *testing.T, st spend.Store, evs []spend.Event, r *mrand.Rand) {
	for len(evs) > 0 {
		n := min(len(evs), 1+r.IntN(30))
		if _, err := st.Record(c, evs[:n]); err != nil {
			t.Error(err)
			return
		}
		evs = evs[n:]
	}
}

// testEndUserTracked: an event naming an end user with no record creates
// it, with its spend, as LiteLLM's spend update upserts its end user table
// (/customer/info answers it); concurrent consumers recording events of the
// same new end user create it once and count every cost once; an id no
// record can have creates nothing.
func testEndUserTracked(t *testing.T, h Harness) {
	c, k := oneKey(t, h)
	now := time.Now().UTC()
	eu, bad := ID("ishaan3"), ID("a#b")
	if _, err := h.Keys.GetEndUser(c, eu); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("end user before any spend: %v", err)
	}
	var wg sync.WaitGroup
	stores := []spend.Store{h.Store, h.Other(t), h.Store, h.Other(t)}
	for i, st := range stores {
		wg.Add(1)
		go func(st spend.Store, cost int64) {
			defer wg.Done()
			e := Event(k, eu, now, cost)
			if _, err := st.Record(c, []spend.Event{e, e}); err != nil {
				t.Error(err)
			}
		}(st, int64(100*(i+1)))
	}
	wg.Wait()
	if _, err := h.Store.Record(c, []spend.Event{Event(k, bad, now, 5)}); err != nil {
		t.Fatal(err)
	}
	got, err := h.Keys.GetEndUser(c, eu)
	if err != nil {
		t.Fatalf("end user after its spend: %v", err)
	}
	if n := keys.Nanos(got.Spend); n != 1000 {
		t.Errorf("end user spend %d nano-USD, want 1000 (100+200+300+400, each once)", n)
	}
	if got.CreatedAt.IsZero() {
		t.Errorf("end user created_at not set")
	}
	if ok, err := h.Keys.HasEndUsers(c); err != nil || !ok {
		t.Errorf("HasEndUsers = %v, %v; want true", ok, err)
	}
	list, err := h.Keys.EndUsers().List(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if e.ID == bad {
			t.Errorf("an end user with an id no record can have was created: %q", bad)
		}
	}
}
