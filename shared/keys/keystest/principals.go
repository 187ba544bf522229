package keystest

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// testModelAliases: the model alias maps of keys, teams and users read back
// as written (from another instance too), survive a regeneration, are
// replaced or removed by an update, and an empty name or target is refused
// naming aliases.
func testModelAliases(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	aliases := map[string]string{"my-gpt": "gpt-4o", "fast": "claude-haiku", "a.b/c d": "x"}
	k := keys.Key{Hash: keys.HashSecret(id("sk")), CreatedAt: when, Settings: keys.Settings{Aliases: aliases}}
	tm := keys.Team{ID: id("team"), CreatedAt: when, Settings: keys.Settings{Aliases: aliases}}
	u := keys.User{ID: id("user"), Role: keys.RoleInternalUser, CreatedAt: when, Settings: keys.Settings{Aliases: aliases}}
	for _, err := range []error{s.CreateKey(c, k), s.Teams().Create(c, tm), s.Users().Create(c, u)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	other := newStore(t)
	gotK, errK := other.GetKey(c, k.Hash)
	gotT, errT := other.GetTeam(c, tm.ID)
	gotU, errU := other.GetUser(c, u.ID)
	for what, got := range map[string]map[string]string{"key": gotK.Aliases, "team": gotT.Aliases, "user": gotU.Aliases} {
		if !reflect.DeepEqual(got, aliases) {
			t.Fatalf("%s aliases read back %v (errors %v %v %v), want %v", what, got, errK, errT, errU, aliases)
		}
	}

	nk := gotK
	nk.Hash = keys.HashSecret(id("sk"))
	if got, err := s.RegenerateKey(c, k.Hash, nk); err != nil || !reflect.DeepEqual(got.Aliases, aliases) {
		t.Fatalf("RegenerateKey aliases = %v, %v; want %v", got.Aliases, err, aliases)
	}
	nk.Aliases = map[string]string{"my-gpt": "gpt-4o-mini"}
	if got, err := s.UpdateKey(c, nk); err != nil || !reflect.DeepEqual(got.Aliases, nk.Aliases) {
		t.Fatalf("UpdateKey aliases = %v, %v; want %v", got.Aliases, err, nk.Aliases)
	}
	gotT.Aliases, gotU.Aliases = nil, map[string]string{}
	if got, err := s.Teams().Update(c, gotT); err != nil || got.Aliases != nil {
		t.Fatalf("UpdateTeam without aliases = %v, %v; want none", got.Aliases, err)
	}
	if got, err := other.Users().Update(c, gotU); err != nil || got.Aliases != nil {
		t.Fatalf("UpdateUser with empty aliases = %v, %v; want none", got.Aliases, err)
	}
	if got, err := other.GetUser(c, u.ID); err != nil || got.Aliases != nil {
		t.Fatalf("GetUser after removing aliases = %v, %v; want none", got.Aliases, err)
	}

	for _, bad := range []map[string]string{{"": "gpt-4o"}, {"my-gpt": ""}} {
		invalidParam(t, s.CreateKey(c, keys.Key{Hash: keys.HashSecret(id("sk")), Settings: keys.Settings{Aliases: bad}}), "aliases")
		invalidParam(t, errOf(s.Teams().Update(c, keys.Team{ID: tm.ID, Settings: keys.Settings{Aliases: bad}})), "aliases")
	}
	if got, err := s.GetTeam(c, tm.ID); err != nil || got.Aliases != nil {
		t.Fatalf("a refused update changed the team: %v, %v", got.Aliases, err)
	}
}

// testSetSpend: SetSpend sets a record's lifetime spend and, with a
// budget_duration, its current period's spend (what the budget checks
// read); spend added after it adds to it; a missing record is ErrNotFound.
func testSetSpend(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	now := time.Now()
	plain := keys.User{ID: id("user"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(5)}}}
	periodic := keys.User{ID: id("user"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(5), Duration: "30d"}}}
	for _, u := range []keys.User{plain, periodic} {
		if err := s.Users().Create(c, u); err != nil {
			t.Fatal(err)
		}
		r := keys.Ref{Kind: keys.KindUser, ID: u.ID}
		if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: r, Nanos: keys.Nanos(7), At: now}}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetUser(c, u.ID); !got.Exceeded(now) {
			t.Fatalf("user %s with spend 7 of 5 not over budget: %+v", u.Budget.Duration, got.Budget)
		}
		if err := s.SetSpend(c, r, 0, now); err != nil {
			t.Fatal(err)
		}
		got, err := newStore(t).GetUser(c, u.ID)
		if err != nil || got.Spend != 0 || got.Current(now) != 0 || got.Exceeded(now) {
			t.Fatalf("after SetSpend 0 (%q): %+v, %v", u.Budget.Duration, got.Budget, err)
		}
		if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: r, Nanos: keys.Nanos(1.5), At: now}}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetUser(c, u.ID); got.Spend != 1.5 || got.Current(now) != 1.5 {
			t.Fatalf("spend after SetSpend and 1.5 more (%q): %+v", u.Budget.Duration, got.Budget)
		}
		if err := s.SetSpend(c, r, keys.Nanos(2), now); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetUser(c, u.ID); got.Spend != 2 || got.Current(now) != 2 {
			t.Fatalf("after SetSpend 2 (%q): %+v", u.Budget.Duration, got.Budget)
		}
	}
	absent(t, "SetSpend of a missing user", s.SetSpend(c, keys.Ref{Kind: keys.KindUser, ID: id("nobody")}, 0, now))
}

// testMemberEmail: a member added with a user_email keeps it on the
// membership and in the team's member list (through a role change too),
// and a user AddMember creates gets it.
func testMemberEmail(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	team, user := id("team"), id("user")
	if err := s.Teams().Create(c, keys.Team{ID: team}); err != nil {
		t.Fatal(err)
	}
	m := keys.Member{Group: keys.KindTeam, GroupID: team, UserID: user, Role: keys.MemberUser, Email: "ann@example.com", CreatedAt: when}
	if err := s.AddMember(c, m); err != nil {
		t.Fatal(err)
	}
	other := newStore(t)
	if got, err := other.GetMember(c, keys.KindTeam, team, user); err != nil || got.Email != m.Email {
		t.Fatalf("GetMember = %+v, %v; want email %s", got, err, m.Email)
	}
	if u, err := other.GetUser(c, user); err != nil || u.Email != m.Email {
		t.Fatalf("the user AddMember created = %+v, %v; want email %s", u, err, m.Email)
	}
	want := []keys.TeamMember{{UserID: user, Email: m.Email, Role: keys.MemberUser}}
	if tm, err := other.GetTeam(c, team); err != nil || !reflect.DeepEqual(tm.Members, want) {
		t.Fatalf("team members = %+v, %v; want %+v", tm.Members, err, want)
	}
	m.Role = keys.MemberAdmin
	if got, err := s.UpdateMember(c, m); err != nil || got.Email != m.Email {
		t.Fatalf("UpdateMember = %+v, %v", got, err)
	}
	want[0].Role = keys.MemberAdmin
	if tm, err := other.GetTeam(c, team); err != nil || !reflect.DeepEqual(tm.Members, want) {
		t.Fatalf("team members after UpdateMember = %+v, %v; want %+v", tm.Members, err, want)
	}
}
