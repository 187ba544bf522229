// Package spendtest is the conformance suite of spend.Store: the memory
// store and the DynamoDB store (ddbspend) both run it.
package spendtest

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// Harness is one store under test.
type Harness struct {
	// Store is the store under test.
	Store spend.Store
	// Other returns another store on the same state (another consumer
	// instance; the memory store returns itself).
	Other func(t *testing.T) spend.Store
	// Keys holds the records the store adds spend to.
	Keys keys.Admin
	// Strict, if set, runs the strict-budget tests (strict.go) on the
	// store, whose events settle the holds Strict.Limits admits.
	Strict *Strict
}

// Run runs the suite; newHarness gives each test fresh state.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []struct {
		name   string
		fn     func(t *testing.T, h Harness)
		strict bool // needs Harness.Strict; runs on its own (a load test)
	}{
		{"StrictNeverOverBudget", testNeverOverBudget, true},
		{"StrictRelease", testRelease, true},
		{"StrictTriedHold", testTriedHold, true},
		{"RecordOnce", testRecordOnce, false},
		{"Queries", testQueries, false},
		{"ConcurrentDuplicates", testConcurrentDuplicates, false},
		{"OrgRollup", testOrgRollup, false},
		{"LargeBatch", testLargeBatch, false},
		{"LogPages", testLogPages, false},
		{"MissingRecords", testMissingRecords, false},
		{"EndUserTracked", testEndUserTracked, false},
		{"RegeneratedKey", testRegeneratedKey, false},
		{"UnknownCost", testUnknownCost, false},
		{"Invalid", testInvalid, false},
		{"BudgetPeriods", testBudgetPeriods, false},
		{"ModelBudgetSpend", testModelBudgetSpend, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.strict {
				t.Parallel()
			}
			h := newHarness(t)
			if tt.strict && h.Strict == nil {
				t.Skip("no strict-budget harness")
			}
			tt.fn(t, h)
		})
	}
}

func testRecordOnce(t *testing.T, h Harness) {
	c := ctx(t)
	w := NewWorld(t, h.Keys, 2, 1)
	now := time.Now().UTC()
	evs := []spend.Event{
		Event(&w.Keys[0], w.EndUsers[0], now.Add(-2*time.Second), 1_234_567),
		Event(&w.Keys[1], "", now.Add(-time.Second), 2_000_000_001),
		Event(nil, "", now.Add(-time.Second), 5),
	}
	evs = append(evs, evs[0]) // a duplicate in the same batch
	res, err := h.Store.Record(c, evs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Recorded != 3 || res.Duplicates != 1 {
		t.Fatalf("first Record: %+v, want 3 recorded, 1 duplicate", res)
	}
	for range 2 { // again, through this and another instance
		for _, st := range []spend.Store{h.Store, h.Other(t)} {
			res, err := st.Record(c, evs[:3])
			if err != nil {
				t.Fatal(err)
			}
			if res.Recorded != 0 || res.Duplicates != 3 {
				t.Fatalf("Record again: %+v, want 0 recorded, 3 duplicates", res)
			}
		}
	}
	want := Sum(evs)
	if want.Refs[keys.Ref{Kind: keys.KindMember, ID: keys.MemberID(w.Keys[0].TeamID, w.Keys[0].UserID)}] != 1_234_567 {
		t.Fatalf("test bug: member delta missing: %v", want.Refs)
	}
	Check(t, h.Store, h.Keys, want, now.Add(-time.Hour), now)
}

func testQueries(t *testing.T, h Harness) {
	c := ctx(t)
	w := NewWorld(t, h.Keys, 3, 2)
	day := time.Date(2031, 5, 6, 12, 0, 0, 0, time.UTC)
	a := Event(&w.Keys[0], w.EndUsers[0], day, 100)
	a.Tags, a.UsageEstimated, a.Stream, a.CachedTokens, a.Retries, a.Fallbacks, a.Attempts = []string{"x", "y"}, true, true, 3, 1, 1, 3
	b := Event(&w.Keys[1], w.EndUsers[1], day.Add(time.Hour), 200)
	b.Status, b.StatusCode = spend.StatusFailure, 429
	d := Event(&w.Keys[0], "", day.AddDate(0, 0, 1), 300) // next day
	d.ModelGroup, d.Provider = "gpt-4o", "azure"
	if _, err := h.Store.Record(c, []spend.Event{a, b, d}); err != nil {
		t.Fatal(err)
	}
	// By request id, with every field back as written.
	got, err := h.Store.Logs(c, spend.LogQuery{RequestID: a.RequestID, From: day.AddDate(0, 0, -1), To: day.AddDate(0, 0, 3)})
	if err != nil || len(got) != 1 {
		t.Fatalf("log by request id: %v, %v", got, err)
	}
	want := a
	want.Start, want.End = a.Start.Truncate(time.Microsecond), a.End.Truncate(time.Microsecond)
	if g := got[0]; !g.Start.Equal(want.Start) || !g.End.Equal(want.End) {
		t.Errorf("times = %v %v, want %v %v", g.Start, g.End, want.Start, want.End)
	} else {
		g.Start, g.End = want.Start, want.End
		if fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("log = %+v\nwant  %+v", g, want)
		}
	}
	ids := func(q spend.LogQuery) []string {
		t.Helper()
		q.From, q.To = day.AddDate(0, 0, -1), day.AddDate(0, 0, 3)
		logs, err := h.Store.Logs(c, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range logs {
			out = append(out, l.RequestID)
		}
		return out
	}
	if g := ids(spend.LogQuery{KeyHash: w.Keys[0].Hash}); !slices.Equal(g, []string{d.RequestID, a.RequestID}) {
		t.Errorf("logs of key 0 = %v, want [d a] newest first", g)
	}
	if g := ids(spend.LogQuery{UserID: w.Keys[1].UserID}); !slices.Equal(g, []string{b.RequestID}) {
		t.Errorf("logs of user 1 = %v, want [b]", g)
	}
	if g := ids(spend.LogQuery{EndUser: w.EndUsers[0]}); !slices.Equal(g, []string{a.RequestID}) {
		t.Errorf("logs of end user 0 = %v", g)
	}
	if g := ids(spend.LogQuery{Limit: 1}); len(g) != 1 || g[0] != d.RequestID {
		t.Errorf("limit 1 = %v", g)
	}
	logs, err := h.Store.Logs(c, spend.LogQuery{From: day.Add(30 * time.Minute), To: day.AddDate(0, 0, 1)})
	if err != nil || len(logs) != 1 || logs[0].RequestID != b.RequestID {
		t.Errorf("logs in [day+30m, day+1d) = %v, %v; want [b]", logs, err)
	}
	// Daily rows and totals.
	rows, err := h.Store.Daily(c, spend.DailyQuery{From: day, To: day.AddDate(0, 0, 1), KeyHash: w.Keys[0].Hash})
	if err != nil || len(rows) != 2 {
		t.Fatalf("daily rows of key 0: %+v, %v", rows, err)
	}
	if r := rows[0]; r.Day != "2031-05-06" || r.Spend != 100 || r.Requests != 1 || r.Successes != 1 || r.CachedTokens != 3 || r.TeamID != w.Keys[0].TeamID || r.UserID != w.Keys[0].UserID {
		t.Errorf("row 0 = %+v", r)
	}
	if r := rows[1]; r.Day != "2031-05-07" || r.ModelGroup != "gpt-4o" || r.Provider != "azure" || r.Spend != 300 {
		t.Errorf("row 1 = %+v", r)
	}
	rows, _ = h.Store.Daily(c, spend.DailyQuery{From: day, To: day, TeamID: w.Keys[1].TeamID})
	if len(rows) != 1 || rows[0].Failures != 1 || rows[0].Spend != 200 {
		t.Errorf("team 1's rows on day = %+v", rows)
	}
	tot, err := h.Store.Totals(c, spend.TotalsQuery{From: day, To: day.AddDate(0, 0, 1), By: spend.ByKey})
	if err != nil || len(tot) != 2 || tot[0].ID != w.Keys[0].Hash || tot[0].Spend != 400 || tot[1].Spend != 200 {
		t.Errorf("totals by key = %+v, %v", tot, err)
	}
	tot, _ = h.Store.Totals(c, spend.TotalsQuery{From: day, To: day, By: spend.ByEndUser})
	if len(tot) != 2 || tot[0].ID != w.EndUsers[1] || tot[0].Spend != 200 {
		t.Errorf("totals by end user = %+v", tot)
	}
	tot, _ = h.Store.Totals(c, spend.TotalsQuery{From: day, To: day.AddDate(0, 0, 1), By: spend.ByTeam})
	if len(tot) != 2 || tot[0].ID != w.Keys[0].TeamID || tot[0].Spend != 400 {
		t.Errorf("totals by team = %+v", tot)
	}
	if _, err := h.Store.Totals(c, spend.TotalsQuery{From: day, To: day, By: "color"}); err == nil {
		t.Error("grouping by an unknown field succeeded")
	}
	if _, err := h.Store.Daily(c, spend.DailyQuery{From: day, To: day.AddDate(-2, 0, 0)}); err == nil {
		t.Error("a reversed range succeeded")
	}
}

func testConcurrentDuplicates(t *testing.T, h Harness) {
	c := ctx(t)
	w := NewWorld(t, h.Keys, 4, 5)
	now := time.Now().UTC()
	r := mrand.New(mrand.NewPCG(1, 2))
	evs := RandomEvents(w, 300, now, r)
	// Four consumers, each recording every event (in its own order and
	// batching) at once.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	var mu sync.Mutex
	recorded := 0
	for i := range 4 {
		st := h.Store
		if i%2 == 1 {
			st = h.Other(t)
		}
		mine := slices.Clone(evs)
		rr := mrand.New(mrand.NewPCG(uint64(i), 9))
		rr.Shuffle(len(mine), func(a, b int) { mine[a], mine[b] = mine[b], mine[a] })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(mine) > 0 {
				n := min(len(mine), 1+rr.IntN(60))
				res, err := st.Record(c, mine[:n])
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				recorded += res.Recorded
				mu.Unlock()
				mine = mine[n:]
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if recorded != len(evs) {
		t.Errorf("recorded %d in all, want %d (each once)", recorded, len(evs))
	}
	Check(t, h.Store, h.Keys, Sum(evs), now.Add(-2*time.Hour), now)
}

// testLargeBatch: more items than one transaction holds.
func testLargeBatch(t *testing.T, h Harness) {
	c := ctx(t)
	w := NewWorld(t, h.Keys, 3, 0)
	now := time.Now().UTC()
	var evs []spend.Event
	for i := range 250 {
		evs = append(evs, Event(&w.Keys[i%3], ID("eu"), now.Add(-time.Duration(i)*time.Millisecond), int64(i+1)))
	}
	res, err := h.Store.Record(c, evs)
	if err != nil || res.Recorded != 250 {
		t.Fatalf("Record: %+v, %v", res, err)
	}
	res, err = h.Store.Record(c, append(evs[100:150:150], evs[200:]...))
	if err != nil || res.Recorded != 0 || res.Duplicates != 100 {
		t.Fatalf("Record again: %+v, %v", res, err)
	}
	Check(t, h.Store, h.Keys, Sum(evs), now.Add(-time.Hour), now)
}

// testMissingRecords: spend for records that do not exist is skipped; the
// event is still logged and counted in its daily row.
func testMissingRecords(t *testing.T, h Harness) {
	c := ctx(t)
	k := keys.Key{Hash: keys.HashSecret(ID("sk")), TeamID: ID("ghost-team"), UserID: ID("ghost-user")}
	if err := h.Keys.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	e := Event(&k, ID("ghost-eu"), now, 777)
	res, err := h.Store.Record(c, []spend.Event{e})
	if err != nil || res.Recorded != 1 {
		t.Fatalf("Record: %+v, %v", res, err)
	}
	if got := keySpend(t, h, &k); got != 777 {
		t.Errorf("key spend = %d, want 777", got)
	}
	rows, err := h.Store.Daily(c, spend.DailyQuery{KeyHash: k.Hash, From: now, To: now})
	if err != nil || len(rows) != 1 || rows[0].Spend != 777 {
		t.Errorf("rows = %+v, %v", rows, err)
	}
}

// testRegeneratedKey: events still carrying a key's old hash when it was
// regenerated (in flight, redelivered) add to the key it became, exactly
// once, through a chain of regenerations, in one batch with events of the
// new hash.
func testRegeneratedKey(t *testing.T, h Harness) {
	c := ctx(t)
	w := NewWorld(t, h.Keys, 1, 1)
	k := w.Keys[0]
	now := time.Now().UTC()
	first := Event(&k, w.EndUsers[0], now, 1_000)
	if _, err := h.Store.Record(c, []spend.Event{first}); err != nil {
		t.Fatal(err)
	}
	old := k
	var late []spend.Event
	for i := range 2 {
		nk := k
		nk.Hash = keys.HashSecret(ID("sk"))
		if _, err := h.Keys.RegenerateKey(c, k.Hash, nk); err != nil {
			t.Fatal(err)
		}
		late = append(late, Event(&k, "", now, int64(20_000*(i+1))))
		k = nk
	}
	late = append(late, Event(&k, "", now, 300_000), Event(&old, "", now, 4_000_000))
	if _, err := h.Other(t).Record(c, late); err != nil {
		t.Fatal(err)
	}
	// Redelivered: counted once.
	if res, err := h.Store.Record(c, late); err != nil || res.Duplicates != len(late) {
		t.Fatalf("redelivery: %+v, %v", res, err)
	}
	want := int64(1_000 + 20_000 + 40_000 + 300_000 + 4_000_000)
	if got := keySpend(t, h, &k); got != want {
		t.Errorf("regenerated key's spend %d nano-USD, want %d (its old hashes' events included)", got, want)
	}
	for _, r := range []keys.Ref{{Kind: keys.KindTeam, ID: k.TeamID}, {Kind: keys.KindUser, ID: k.UserID}} {
		if got := RecordSpend(t, h.Keys, r); got != want {
			t.Errorf("%s spend %d nano-USD, want %d", r, got, want)
		}
	}
	if _, err := h.Keys.GetKey(c, old.Hash); !errors.Is(err, keys.ErrNotFound) {
		t.Errorf("the old secret still authenticates: %v", err)
	}
}

func testUnknownCost(t *testing.T, h Harness) {
	c, k := oneKey(t, h)
	now := time.Now().UTC()
	e := Event(k, "", now, 0)
	e.CostKnown = false
	if _, err := h.Store.Record(c, []spend.Event{e}); err != nil {
		t.Fatal(err)
	}
	logs, err := h.Store.Logs(c, spend.LogQuery{RequestID: e.RequestID})
	if err != nil || len(logs) != 1 || logs[0].CostKnown {
		t.Fatalf("log: %+v, %v; want one with an unknown cost", logs, err)
	}
	rows, _ := h.Store.Daily(c, spend.DailyQuery{KeyHash: k.Hash, From: now, To: now})
	if len(rows) != 1 || rows[0].Requests != 1 || rows[0].Spend != 0 || rows[0].PromptTokens != 12 {
		t.Errorf("rows = %+v", rows)
	}
	if got := keySpend(t, h, k); got != 0 {
		t.Errorf("key spend = %d, want 0", got)
	}
}

func testInvalid(t *testing.T, h Harness) {
	c, k := oneKey(t, h)
	now := time.Now().UTC()
	good := Event(k, "", now, 10)
	for name, mut := range map[string]func(e *spend.Event){
		"negative cost":  func(e *spend.Event) { e.Cost = -1 },
		"version":        func(e *spend.Event) { e.Version = spend.VersionOrg + 1 },
		"v1 with org":    func(e *spend.Event) { e.OrganizationID = "org-1" },
		"no request id":  func(e *spend.Event) { e.RequestID = "" },
		"bad key hash":   func(e *spend.Event) { e.KeyHash = "sk-raw-secret" },
		"no end":         func(e *spend.Event) { e.End = time.Time{} },
		"unknown status": func(e *spend.Event) { e.Status = "maybe" },
	} {
		bad := Event(k, "", now, 10)
		mut(&bad)
		if _, err := h.Store.Record(c, []spend.Event{good, bad}); err == nil {
			t.Errorf("%s: recorded", name)
		}
	}
	if got := keySpend(t, h, k); got != 0 {
		t.Errorf("key spend = %d after rejected batches, want 0", got)
	}
	logs, _ := h.Store.Logs(c, spend.LogQuery{RequestID: good.RequestID})
	if len(logs) != 0 {
		t.Errorf("the good event of a rejected batch was logged")
	}
}

// testBudgetPeriods: one batch across a budget_duration boundary adds each
// event to its own period; a soft budget crossing is reported once.
func testBudgetPeriods(t *testing.T, h Harness) {
	c := ctx(t)
	soft := 0.5
	k := keys.Key{Hash: keys.HashSecret(ID("sk")), Settings: keys.Settings{Budget: keys.Budget{SoftBudget: &soft, Duration: "1d"}}}
	if err := h.Keys.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	day2 := time.Now().UTC().Truncate(24 * time.Hour)
	evs := []spend.Event{
		Event(&k, "", day2.Add(-time.Second), 300_000_000),
		Event(&k, "", day2.Add(time.Second), 400_000_000),
		Event(&k, "", day2.Add(2*time.Second), 200_000_000), // crosses 0.5 in day 2
	}
	res, err := h.Store.Record(c, evs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.SoftCrossed, keys.Ref{Kind: keys.KindKey, ID: k.Hash}) {
		t.Errorf("soft crossing not reported: %+v", res)
	}
	more := Event(&k, "", day2.Add(3*time.Second), 1)
	res, err = h.Store.Record(c, []spend.Event{more})
	if err != nil || len(res.SoftCrossed) != 0 {
		t.Errorf("second crossing in the period reported: %+v, %v", res, err)
	}
	got, err := h.Keys.GetKey(c, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if keys.Nanos(got.Spend) != 900_000_001 || keys.Nanos(got.PeriodSpend) != 600_000_001 || !got.PeriodStart.Equal(day2) {
		t.Errorf("spend %v, period %v from %v; want 0.900000001, 0.600000001 from %v", got.Spend, got.PeriodSpend, got.PeriodStart, day2)
	}
}
