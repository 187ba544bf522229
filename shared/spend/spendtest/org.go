package spendtest

import (
	"context"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// orgWorld is a World whose team 0 belongs to a new organization: the
// organization's id, and the events of the world's keys naming it as the
// gateway does (VersionOrg) for the keys of that team.
func orgWorld(t *testing.T, h Harness, nKeys, nEndUsers int) (*World, string) {
	t.Helper()
	c := context.Background()
	w := NewWorld(t, h.Keys, nKeys, nEndUsers)
	org := ID("org")
	if err := h.Keys.CreateOrganization(c, keys.Organization{ID: org}); err != nil {
		t.Fatal(err)
	}
	team, err := h.Keys.GetTeam(c, w.Teams[0])
	if err != nil {
		t.Fatal(err)
	}
	team.OrganizationID = org
	if _, err := h.Keys.UpdateTeam(c, team); err != nil {
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
