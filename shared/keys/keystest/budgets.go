package keystest

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// newBudget is a budget with every field set.
func newBudget() keys.BudgetRecord {
	return keys.BudgetRecord{
		ID: id("budget"), CreatedBy: "master_key", UpdatedBy: "master_key",
		Settings: keys.Settings{
			RPMLimit: 10, TPMLimit: 1000, MaxParallel: i64(3),
			ModelMaxBudget: map[string]keys.ModelBudget{"gpt-4o": {Limit: 500_000_000, Period: "1d"}, "o3": {Limit: 1}},
			Budget:         keys.Budget{MaxBudget: usd(5), SoftBudget: usd(4), Duration: "30d"},
		},
	}
}

// testBudgets: a budget is created, read, updated (its creation kept),
// listed and deleted; an id taken is ErrExists; only its limits are kept.
func testBudgets(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	b := newBudget()
	created := time.Date(2031, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	b.CreatedAt, b.UpdatedAt = created, created
	in := b
	in.Models, in.Blocked = []string{"m"}, true // not a budget's: dropped
	if err := s.Budgets().Create(c, in); err != nil {
		t.Fatal(err)
	}
	if err := s.Budgets().Create(c, b); !errors.Is(err, keys.ErrExists) {
		t.Fatalf("CreateBudget of a taken id = %v, want ErrExists", err)
	}
	got, err := newStore(t).GetBudget(c, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, b) {
		t.Fatalf("GetBudget = %+v\nwant %+v", got, b)
	}
	up := keys.BudgetRecord{ID: b.ID, CreatedBy: "someone", UpdatedBy: "u2", UpdatedAt: created.Add(time.Hour),
		Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(7)}}}
	out, err := s.Budgets().Update(c, up)
	if err != nil {
		t.Fatal(err)
	}
	want := up
	want.CreatedAt, want.CreatedBy = created, "master_key"
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("UpdateBudget = %+v\nwant %+v", out, want)
	}
	if got, _ := newStore(t).GetBudget(c, b.ID); !reflect.DeepEqual(got, want) {
		t.Fatalf("GetBudget after update = %+v\nwant %+v", got, want)
	}
	if _, err := s.Budgets().Update(c, keys.BudgetRecord{ID: id("absent")}); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("UpdateBudget of an absent budget = %v, want ErrNotFound", err)
	}
	all, err := s.Budgets().List(c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(all, func(x keys.BudgetRecord) bool { return reflect.DeepEqual(x, want) }) {
		t.Fatalf("ListBudgets = %+v, want it to hold %+v", all, want)
	}
	if err := s.DeleteBudget(c, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := newStore(t).GetBudget(c, b.ID); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("GetBudget after delete = %v, want ErrNotFound", err)
	}
	if err := s.DeleteBudget(c, b.ID); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("DeleteBudget twice = %v, want ErrNotFound", err)
	}
	for name, bad := range map[string]keys.BudgetRecord{
		"bad id":          {ID: "a#b"},
		"NaN max_budget":  {ID: id("b"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(math.NaN())}}},
		"Inf soft_budget": {ID: id("b"), Settings: keys.Settings{Budget: keys.Budget{SoftBudget: usd(math.Inf(1))}}},
		"negative rpm":    {ID: id("b"), Settings: keys.Settings{RPMLimit: -1}},
		"bad duration":    {ID: id("b"), Settings: keys.Settings{Budget: keys.Budget{Duration: "1y"}}},
		"links a budget":  {ID: id("b"), Settings: keys.Settings{BudgetID: "other"}},
		"bad model":       {ID: id("b"), Settings: keys.Settings{ModelMaxBudget: map[string]keys.ModelBudget{"m": {Limit: -1}}}},
	} {
		if err := s.Budgets().Create(c, bad); !errors.Is(err, keys.ErrInvalid) {
			t.Errorf("CreateBudget(%s) = %v, want ErrInvalid", name, err)
		}
	}
}

// linkTwo creates a budget and two records linking it (an end user with
// its own max_budget, which the budget's replaces, and a membership); it
// returns the budget.
func linkTwo(t *testing.T, s Store, maxBudget float64) (keys.BudgetRecord, keys.EndUser, keys.Member) {
	c := ctx(t)
	b := keys.BudgetRecord{ID: id("budget"), Settings: keys.Settings{RPMLimit: 7, Budget: keys.Budget{MaxBudget: usd(maxBudget), Duration: "1d"}}}
	if err := s.Budgets().Create(c, b); err != nil {
		t.Fatal(err)
	}
	e := keys.EndUser{ID: id("eu"), Settings: keys.Settings{BudgetID: b.ID, RPMLimit: 1000, Budget: keys.Budget{MaxBudget: usd(100)}}}
	if err := s.EndUsers().Create(c, e); err != nil {
		t.Fatal(err)
	}
	team := id("team")
	if err := s.Teams().Create(c, keys.Team{ID: team}); err != nil {
		t.Fatal(err)
	}
	m := keys.Member{Group: keys.KindTeam, GroupID: team, UserID: id("u"), Role: keys.MemberUser, Settings: keys.Settings{BudgetID: b.ID}}
	if err := s.AddMember(c, m); err != nil {
		t.Fatal(err)
	}
	return b, e, m
}

// testBudgetLinks: records keep the budget id they link, as they are
// (their own limits unchanged), and BudgetLinks finds them.
func testBudgetLinks(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	b, e, m := linkTwo(t, s, 1)
	got, err := newStore(t).GetEndUser(c, e.ID)
	if err != nil || got.BudgetID != b.ID || got.RPMLimit != 1000 || *got.MaxBudget != 100 {
		t.Fatalf("GetEndUser = %+v, %v; want budget_id %s and its own limits", got, err, b.ID)
	}
	gm, err := newStore(t).GetMember(c, keys.KindTeam, m.GroupID, m.UserID)
	if err != nil || gm.BudgetID != b.ID {
		t.Fatalf("GetMember = %+v, %v; want budget_id %s", gm, err, b.ID)
	}
	links, err := s.BudgetLinks(c, b.ID)
	want := []keys.Ref{{Kind: keys.KindEndUser, ID: e.ID}, m.Ref()}
	if err != nil || !reflect.DeepEqual(links, want) {
		t.Fatalf("BudgetLinks = %v, %v; want %v", links, err, want)
	}
	e.BudgetID = ""
	if _, err := s.EndUsers().Update(c, e); err != nil {
		t.Fatal(err)
	}
	if links, err := s.BudgetLinks(c, b.ID); err != nil || !reflect.DeepEqual(links, want[1:]) {
		t.Fatalf("BudgetLinks after unlinking = %v, %v; want %v", links, err, want[1:])
	}
	// Organizations and their memberships link budgets too.
	org := id("org")
	om := keys.Member{Group: keys.KindOrg, GroupID: org, UserID: m.UserID, Role: keys.OrgInternalUser, Settings: keys.Settings{BudgetID: b.ID}}
	if err := errors.Join(s.Organizations().Create(c, keys.Organization{ID: org, Settings: keys.Settings{BudgetID: b.ID}}), s.AddMember(c, om)); err != nil {
		t.Fatal(err)
	}
	want = []keys.Ref{m.Ref(), {Kind: keys.KindOrg, ID: org}, om.Ref()}
	if links, err := s.BudgetLinks(c, b.ID); err != nil || !reflect.DeepEqual(links, want) {
		t.Fatalf("BudgetLinks with an organization and its member = %v, %v; want %v", links, err, want)
	}
}

// testLinkedBudget: keys.Linked over keys.Cached gives every record that
// links a budget the budget's limits; a change of the budget reaches every
// linked record within the cache TTL (not before: it is cached), and a
// record that links nothing keeps its own.
func testLinkedBudget(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	b, e, m := linkTwo(t, s, 1)
	now := time.Now()
	cached := keys.NewCached(newStore(t), time.Second, func() time.Time { return now })
	r := keys.Linked{Reader: cached}
	check := func(when string, want float64) {
		t.Helper()
		ge, err := r.GetEndUser(c, e.ID)
		if err != nil || ge.MaxBudget == nil || *ge.MaxBudget != want || ge.RPMLimit != 7 || ge.Duration != "1d" {
			t.Fatalf("%s: end user = %+v, %v; want the budget's max_budget %v, rpm 7, 1d", when, ge.Settings, err, want)
		}
		gm, err := r.GetMember(c, keys.KindTeam, m.GroupID, m.UserID)
		if err != nil || gm.MaxBudget == nil || *gm.MaxBudget != want {
			t.Fatalf("%s: member = %+v, %v; want the budget's max_budget %v", when, gm.Settings, err, want)
		}
	}
	check("linked", 1)
	b.MaxBudget = usd(2)
	if _, err := s.Budgets().Update(c, b); err != nil { // another instance
		t.Fatal(err)
	}
	check("within the TTL", 1)
	now = now.Add(time.Second)
	check("after the TTL", 2)

	h := keys.HashSecret(id("sk"))
	if err := s.CreateKey(c, keys.Key{Hash: h, Settings: keys.Settings{RPMLimit: 3}}); err != nil {
		t.Fatal(err)
	}
	if k, err := r.GetKey(c, h); err != nil || k.RPMLimit != 3 || k.MaxBudget != nil {
		t.Fatalf("unlinked key = %+v, %v; want its own limits", k.Settings, err)
	}
	if err := s.DeleteBudget(c, b.ID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if ge, err := r.GetEndUser(c, e.ID); err != nil || *ge.MaxBudget != 100 || ge.RPMLimit != 1000 {
		t.Fatalf("end user of a deleted budget = %+v, %v; want its own limits", ge.Settings, err)
	}
}

// testLinkedSpend: the spend consumer counts a linked record's period
// spend by the budget's budget_duration and reports its soft budget.
func testLinkedSpend(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	b := keys.BudgetRecord{ID: id("budget"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(2), SoftBudget: usd(1), Duration: "1d"}}}
	if err := s.Budgets().Create(c, b); err != nil {
		t.Fatal(err)
	}
	e := keys.EndUser{ID: id("eu"), Settings: keys.Settings{BudgetID: b.ID}} // no budget_duration of its own
	if err := s.EndUsers().Create(c, e); err != nil {
		t.Fatal(err)
	}
	ref := keys.Ref{Kind: keys.KindEndUser, ID: e.ID}
	day := time.Date(2031, 5, 6, 12, 0, 0, 0, time.UTC)
	var reported []time.Time
	for _, at := range []time.Time{day, day.Add(time.Hour), day.AddDate(0, 0, 1)} {
		crossed, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: ref, Nanos: 600_000_000, At: at}})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(crossed, ref) {
			reported = append(reported, at)
		}
	}
	if want := []time.Time{day.Add(time.Hour)}; !slices.EqualFunc(reported, want, time.Time.Equal) {
		t.Fatalf("soft budget crossings at %v, want %v (the budget's soft_budget)", reported, want)
	}
	got, err := keys.Linked{Reader: newStore(t)}.GetEndUser(c, e.ID)
	next := time.Date(2031, 5, 7, 0, 0, 0, 0, time.UTC)
	if err != nil || got.Spend != 1.8 || !got.PeriodStart.Equal(next) || got.PeriodSpend != 0.6 {
		t.Fatalf("end user = %+v, %v; want spend 1.8, the budget's daily period from %v with 0.6", got.Budget, err, next)
	}
	if got.Current(next.Add(time.Hour)) != 0.6 {
		t.Fatalf("Current = %v, want 0.6", got.Current(next.Add(time.Hour)))
	}
}
