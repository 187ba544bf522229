package spendtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/conformance"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// The suite's world: the records events name, the events, what they add
// up to, and the checks of a store against it.

func ctx(t *testing.T) context.Context { return conformance.Within(t, 2*time.Minute) }

// ID returns a unique id with prefix p.
func ID(p string) string { return conformance.ID(p) }

// World is a set of records events name: keys in teams, with users, and
// end users.
type World struct {
	Keys     []keys.Key
	Teams    []string
	Users    []string
	EndUsers []string
}

// NewWorld creates nKeys keys (key i in team i%2 and of user i%3) and
// nEndUsers end users in ks.
func NewWorld(t testing.TB, ks keys.Admin, nKeys, nEndUsers int) *World {
	t.Helper()
	c := context.Background()
	w := &World{}
	for i := range 2 {
		id := ID(fmt.Sprintf("team%d", i))
		if err := ks.Teams().Create(c, keys.Team{ID: id}); err != nil {
			t.Fatal(err)
		}
		w.Teams = append(w.Teams, id)
	}
	for i := range 3 {
		id := ID(fmt.Sprintf("user%d", i))
		if err := ks.Users().Create(c, keys.User{ID: id, Role: keys.RoleInternalUser}); err != nil {
			t.Fatal(err)
		}
		w.Users = append(w.Users, id)
	}
	members := map[string]bool{}
	for i := range nKeys {
		k := keys.Key{Hash: keys.HashSecret(ID("sk")), Alias: ID("alias"), TeamID: w.Teams[i%2], UserID: w.Users[i%3]}
		if err := ks.CreateKey(c, k); err != nil {
			t.Fatal(err)
		}
		w.Keys = append(w.Keys, k)
		if m := keys.MemberID(k.TeamID, k.UserID); !members[m] {
			members[m] = true
			if err := ks.AddMember(c, keys.Member{Group: keys.KindTeam, GroupID: k.TeamID, UserID: k.UserID, Role: keys.MemberUser}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range nEndUsers {
		id := ID("cust")
		if err := ks.EndUsers().Create(c, keys.EndUser{ID: id}); err != nil {
			t.Fatal(err)
		}
		w.EndUsers = append(w.EndUsers, id)
	}
	return w
}

// Event returns a valid event of key k (nil: the master key) ending at end.
func Event(k *keys.Key, endUser string, end time.Time, cost int64) spend.Event {
	e := spend.Event{
		Version: spend.Version, RequestID: ID("req"), Start: end.Add(-1500 * time.Millisecond), End: end,
		Status: spend.StatusSuccess, EndUser: endUser, ModelGroup: "gpt-4o-mini", DeploymentID: "dep-1",
		Provider: "openai", Model: "gpt-4o-mini-2024-07-18", APIBase: "https://api.openai.com/v1", CallType: "chat",
		PromptTokens: 12, CompletionTokens: 7, Cost: cost, CostKnown: true, Attempts: 1, StatusCode: 200,
		Tags: []string{"t1"},
	}
	if k != nil {
		e.KeyHash, e.KeyAlias, e.TeamID, e.UserID = k.Hash, k.Alias, k.TeamID, k.UserID
	}
	return e
}

// RandomEvents returns n events over w's keys and end users, ending within
// the hour before end, with random costs, tokens and statuses.
func RandomEvents(w *World, n int, end time.Time, r *mrand.Rand) []spend.Event {
	evs := make([]spend.Event, n)
	for i := range evs {
		k := &w.Keys[r.IntN(len(w.Keys))]
		eu := ""
		if len(w.EndUsers) > 0 && r.IntN(3) > 0 {
			eu = w.EndUsers[r.IntN(len(w.EndUsers))]
		}
		e := Event(k, eu, end.Add(-time.Duration(r.IntN(3600_000))*time.Millisecond), r.Int64N(5_000_000))
		e.PromptTokens, e.CompletionTokens, e.CachedTokens = r.Int64N(4000), r.Int64N(1000), r.Int64N(100)
		e.ModelGroup = []string{"gpt-4o", "gpt-4o-mini"}[r.IntN(2)]
		e.Provider = []string{"openai", "azure"}[r.IntN(2)]
		switch r.IntN(10) {
		case 0:
			e.Status, e.StatusCode = spend.StatusFailure, 502
		case 1:
			e.Status = spend.StatusDisconnected
		}
		evs[i] = e
	}
	return evs
}

// Want is what a set of distinct events adds up to.
type Want struct {
	Refs     map[keys.Ref]int64
	Rows     map[[4]string]spend.Counters // day, key, model group, provider
	EndUsers map[[2]string]spend.Counters // day, end user
	Logs     map[string]spend.Event
}

// Sum adds up distinct events (by request id; later copies ignored).
func Sum(evs []spend.Event) Want {
	w := Want{Refs: map[keys.Ref]int64{}, Rows: map[[4]string]spend.Counters{}, EndUsers: map[[2]string]spend.Counters{}, Logs: map[string]spend.Event{}}
	for i := range evs {
		e := &evs[i]
		if _, ok := w.Logs[e.RequestID]; ok {
			continue
		}
		w.Logs[e.RequestID] = *e
		for _, d := range e.Deltas() {
			w.Refs[d.Ref] += d.Nanos
		}
		id := [4]string{e.Day(), e.KeyHash, e.ModelGroup, e.Provider}
		c := w.Rows[id]
		c.Add(e)
		w.Rows[id] = c
		if e.EndUser != "" {
			eid := [2]string{e.Day(), e.EndUser}
			c := w.EndUsers[eid]
			c.Add(e)
			w.EndUsers[eid] = c
		}
	}
	return w
}

// RecordSpend reads the lifetime spend of a record in nano-USD; -1 when
// the record does not exist.
func RecordSpend(t testing.TB, ks keys.Admin, r keys.Ref) int64 {
	t.Helper()
	c := context.Background()
	team, user, _ := strings.Cut(r.ID, "#") // a member's id
	read := map[keys.Kind]func() (keys.Budget, error){
		keys.KindKey:  func() (keys.Budget, error) { k, err := ks.GetKey(c, r.ID); return k.Budget, err },
		keys.KindTeam: func() (keys.Budget, error) { tm, err := ks.GetTeam(c, r.ID); return tm.Budget, err },
		keys.KindUser: func() (keys.Budget, error) { u, err := ks.GetUser(c, r.ID); return u.Budget, err },
		keys.KindMember: func() (keys.Budget, error) {
			m, err := ks.GetMember(c, keys.KindTeam, team, user)
			return m.Budget, err
		},
		keys.KindEndUser: func() (keys.Budget, error) { e, err := ks.GetEndUser(c, r.ID); return e.Budget, err },
		keys.KindOrg:     func() (keys.Budget, error) { o, err := ks.GetOrganization(c, r.ID); return o.Budget, err },
	}[r.Kind]
	if read == nil {
		t.Fatalf("read %s: unknown kind", r)
	}
	b, err := read()
	if errors.Is(err, keys.ErrNotFound) {
		return -1
	}
	if err != nil {
		t.Fatalf("read %s: %v", r, err)
	}
	return keys.Nanos(b.Spend)
}

// Check compares everything the store holds for w's events with want.
func Check(t testing.TB, st spend.Store, ks keys.Admin, want Want, from, to time.Time) {
	t.Helper()
	c := context.Background()
	for r, n := range want.Refs {
		if got := RecordSpend(t, ks, r); got != n && got != -1 {
			t.Errorf("%s spend = %d nano-USD, want %d (diff %d)", r, got, n, got-n)
		}
	}
	rows, err := st.Daily(c, spend.DailyQuery{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	got := map[[4]string]spend.Counters{}
	for _, r := range rows {
		got[[4]string{r.Day, r.KeyHash, r.ModelGroup, r.Provider}] = r.Counters
	}
	for id, c := range want.Rows {
		if got[id] != c {
			t.Errorf("daily row %v = %+v, want %+v", id, got[id], c)
		}
	}
	if len(got) != len(want.Rows) {
		t.Errorf("%d daily rows, want %d", len(got), len(want.Rows))
	}
	eus, err := st.Totals(c, spend.TotalsQuery{From: from, To: to, By: spend.ByEndUser})
	if err != nil {
		t.Fatal(err)
	}
	wantEU := map[string]spend.Counters{}
	for id, c := range want.EndUsers {
		wantEU[id[1]] = wantEU[id[1]].Plus(c)
	}
	for _, tot := range eus {
		if wantEU[tot.ID] != tot.Counters {
			t.Errorf("end user %s total = %+v, want %+v", tot.ID, tot.Counters, wantEU[tot.ID])
		}
	}
	if len(eus) != len(wantEU) {
		t.Errorf("%d end user totals, want %d", len(eus), len(wantEU))
	}
	logs, err := st.Logs(c, spend.LogQuery{From: from, To: to.Add(time.Hour), Limit: math.MaxInt32})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, l := range logs {
		seen[l.RequestID]++
	}
	for id := range want.Logs {
		if seen[id] != 1 {
			t.Errorf("log %s found %d times, want once", id, seen[id])
		}
	}
	if len(logs) != len(want.Logs) {
		t.Errorf("%d logs, want %d", len(logs), len(want.Logs))
	}
}

// oneKey returns the context of a test and one key in a world of its own.
func oneKey(t *testing.T, h Harness) (context.Context, *keys.Key) {
	return ctx(t), &NewWorld(t, h.Keys, 1, 0).Keys[0]
}

// keySpend returns the spend recorded on k's record.
func keySpend(t *testing.T, h Harness, k *keys.Key) int64 {
	return RecordSpend(t, h.Keys, keys.Ref{Kind: keys.KindKey, ID: k.Hash})
}
