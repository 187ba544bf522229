package keystest

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

var when = time.Date(2030, 3, 4, 5, 6, 7, 8_000_000, time.UTC)

func testKeyAdminFields(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	k := keys.Key{
		Hash: keys.HashSecret(id("sk")), Alias: id("alias"), KeyName: "sk-...abcd",
		Tags:      []string{"a", "b"},
		CreatedBy: "u1", UpdatedBy: "u2", UpdatedAt: when.Add(time.Hour), CreatedAt: when, Bound: keys.Bound{By: "u1", Team: "t1"},
		Settings: keys.Settings{Metadata: json.RawMessage(`{"env":"ci","n":1}`),

			Budget: keys.Budget{MaxBudget: usd(3), SoftBudget: usd(2), Duration: "1d"}},
	}
	if err := s.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	got, err := newStore(t).GetKey(c, k.Hash)
	if err != nil || !reflect.DeepEqual(got, k) {
		t.Fatalf("GetKey = %+v, %v\nwant %+v", got, err, k)
	}
	u := k
	u.Metadata, u.Tags, u.CreatedBy, u.UpdatedBy = nil, nil, "someone-else", "u3"
	want := u
	want.CreatedBy = "u1" // kept from creation
	if got, err := s.UpdateKey(c, u); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("UpdateKey = %+v, %v\nwant %+v", got, err, want)
	}
	// The bound scope is stored as written: an organization, then none.
	for _, b := range []keys.Bound{{By: "u9", Org: "o1"}, {}} {
		u.Bound, want.Bound = b, b
		if got, err := newStore(t).UpdateKey(c, u); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("UpdateKey bound %+v = %+v, %v\nwant %+v", b, got, err, want)
		}
	}
}

func testKeyAlias(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	alias := id("alias")
	a := keys.Key{Hash: keys.HashSecret(id("sk")), Alias: alias, CreatedAt: when}
	b := keys.Key{Hash: keys.HashSecret(id("sk")), Alias: alias, CreatedAt: when}
	if err := s.CreateKey(c, a); err != nil {
		t.Fatal(err)
	}
	if err := newStore(t).CreateKey(c, b); !errors.Is(err, keys.ErrAliasExists) || !errors.Is(err, keys.ErrExists) {
		t.Fatalf("CreateKey with a taken alias: %v, want ErrAliasExists", err)
	}
	absent(t, "the refused key was stored", errOf(s.GetKey(c, b.Hash)))
	if got, err := s.GetKeyByAlias(c, alias); err != nil || got.Hash != a.Hash {
		t.Fatalf("GetKeyByAlias = %+v, %v", got, err)
	}
	b.Alias = id("other")
	if err := s.CreateKey(c, b); err != nil {
		t.Fatal(err)
	}
	// Renaming onto a taken alias is refused and changes nothing.
	b2 := b
	b2.Alias, b2.RPMLimit = alias, 7
	if _, err := s.UpdateKey(c, b2); !errors.Is(err, keys.ErrAliasExists) {
		t.Fatalf("UpdateKey onto a taken alias: %v", err)
	}
	if got, _ := s.GetKey(c, b.Hash); got.Alias != b.Alias || got.RPMLimit != 0 {
		t.Fatalf("refused update changed the key: %+v", got)
	}
	// Renaming frees the old alias.
	a.Alias = id("renamed")
	if _, err := s.UpdateKey(c, a); err != nil {
		t.Fatal(err)
	}
	absent(t, "old alias still resolves", errOf(s.GetKeyByAlias(c, alias)))
	b.Alias = alias
	if _, err := s.UpdateKey(c, b); err != nil {
		t.Fatalf("taking a freed alias: %v", err)
	}
	if got, err := s.GetKeyByAlias(c, alias); err != nil || got.Hash != b.Hash {
		t.Fatalf("GetKeyByAlias after rename = %+v, %v", got, err)
	}
	// Clearing an alias frees it too.
	b.Alias = ""
	if _, err := s.UpdateKey(c, b); err != nil {
		t.Fatal(err)
	}
	absent(t, "cleared alias still resolves", errOf(s.GetKeyByAlias(c, alias)))
}

func testListKeys(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	team, user := id("team"), id("user")
	var made []keys.Key
	for i, f := range []keys.KeyFilter{{UserID: user, TeamID: team}, {UserID: user}, {TeamID: team}, {}} {
		k := keys.Key{Hash: keys.HashSecret(id("sk")), UserID: f.UserID, TeamID: f.TeamID, Alias: id("a"), CreatedAt: when.Add(time.Duration(i) * time.Second)}
		if err := s.CreateKey(c, k); err != nil {
			t.Fatal(err)
		}
		made = append(made, k)
	}
	hashes := func(ks []keys.Key) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.Hash)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		f    keys.KeyFilter
		want []keys.Key
	}{
		{"user", keys.KeyFilter{UserID: user}, made[:2]},
		{"team", keys.KeyFilter{TeamID: team}, []keys.Key{made[0], made[2]}},
		{"user and team", keys.KeyFilter{UserID: user, TeamID: team}, made[:1]},
		{"alias", keys.KeyFilter{Alias: made[3].Alias}, made[3:]},
	} {
		got, err := newStore(t).ListKeys(c, tt.f)
		if err != nil || !slices.Equal(hashes(got), hashes(tt.want)) {
			t.Errorf("%s: ListKeys = %v, %v; want %v", tt.name, hashes(got), err, hashes(tt.want))
		}
	}
	all, err := s.ListKeys(c, keys.KeyFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range made {
		if !slices.Contains(hashes(all), k.Hash) {
			t.Errorf("ListKeys({}) misses %s", k.Hash[:8])
		}
	}
	if got, _ := s.ListKeys(c, keys.KeyFilter{UserID: user}); len(got) > 0 && !reflect.DeepEqual(got[0], made[0]) {
		t.Errorf("listed key = %+v\nwant %+v", got[0], made[0])
	}
}

func testArchiveKey(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	user := id("user")
	k := keys.Key{Hash: keys.HashSecret(id("sk")), Alias: id("alias"), UserID: user, CreatedAt: when, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(1)}}}
	if err := s.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindKey, ID: k.Hash}, Nanos: 250_000_000, At: when}}); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	got, err := s.ArchiveKey(c, k.Hash, "admin-1")
	if err != nil || got.Hash != k.Hash || got.Spend != 0.25 {
		t.Fatalf("ArchiveKey = %+v, %v", got, err)
	}
	absent(t, "GetKey after ArchiveKey", errOf(s.GetKey(c, k.Hash)))
	if _, err := s.ArchiveKey(c, k.Hash, "admin-1"); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("second ArchiveKey: %v", err)
	}
	absent(t, "alias of a deleted key resolves", errOf(s.GetKeyByAlias(c, k.Alias)))
	del, err := newStore(t).ListDeletedKeys(c, keys.KeyFilter{UserID: user})
	if err != nil || len(del) != 1 {
		t.Fatalf("ListDeletedKeys = %+v, %v; want one", del, err)
	}
	d := del[0]
	if d.Hash != k.Hash || d.Alias != k.Alias || d.DeletedBy != "admin-1" || d.DeletedAt.Before(before) || d.Spend != 0.25 || d.MaxBudget == nil {
		t.Fatalf("deleted key = %+v", d)
	}
	// The alias is free again; the hash may be created anew, with no spend.
	k2 := k
	k2.Hash = keys.HashSecret(id("sk"))
	if err := s.CreateKey(c, k2); err != nil {
		t.Fatalf("reusing a deleted key's alias: %v", err)
	}
	if err := s.CreateKey(c, keys.Key{Hash: k.Hash}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetKey(c, k.Hash); got.Spend != 0 {
		t.Fatalf("re-created key inherited spend %v", got.Spend)
	}
	// Delete of a key keeps an audit copy too.
	if err := s.Delete(c, keys.Ref{Kind: keys.KindKey, ID: k.Hash}); err != nil {
		t.Fatal(err)
	}
	if del, _ := s.ListDeletedKeys(c, keys.KeyFilter{}); len(del) < 2 {
		t.Fatalf("Delete of a key left no audit copy: %+v", del)
	}
}

func testRegenerateKey(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	old := keys.Key{Hash: keys.HashSecret(id("sk")), Alias: id("alias"), CreatedAt: when, CreatedBy: "u1", Settings: keys.Settings{Models: []string{"m"}, Budget: keys.Budget{MaxBudget: usd(5)}}}
	if err := s.CreateKey(c, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindKey, ID: old.Hash}, Nanos: 1_500_000_000, At: when}}); err != nil {
		t.Fatal(err)
	}
	nk := old
	nk.Hash, nk.KeyName, nk.CreatedAt, nk.CreatedBy = keys.HashSecret(id("sk")), "sk-...wxyz", time.Time{}, ""
	got, err := s.RegenerateKey(c, old.Hash, nk)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != nk.Hash || got.Spend != 1.5 || !got.CreatedAt.Equal(when) || got.CreatedBy != "u1" || got.KeyName != "sk-...wxyz" {
		t.Fatalf("RegenerateKey = %+v", got)
	}
	if _, err := newStore(t).GetKey(c, old.Hash); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("old hash still exists: %v", err)
	}
	if k, err := s.GetKeyByAlias(c, old.Alias); err != nil || k.Hash != nk.Hash {
		t.Fatalf("alias resolves to %+v, %v", k, err)
	}
	if k, err := s.GetKey(c, nk.Hash); err != nil || k.Spend != 1.5 {
		t.Fatalf("new key = %+v, %v", k, err)
	}
	if _, err := s.RegenerateKey(c, old.Hash, nk); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("regenerating a gone key: %v", err)
	}
}

func testUsers(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	u := keys.User{
		ID: id("user"), Email: "a@example.com", Alias: "Ann", Role: keys.RoleInternalUser,

		CreatedAt: when, UpdatedAt: when, Settings: keys.Settings{Models: []string{"m1"}, RPMLimit: 10, TPMLimit: 100, MaxParallel: i64(0), Metadata: json.RawMessage(`{"x":1}`),
			Budget: keys.Budget{MaxBudget: usd(9), Duration: "30d"}},
	}
	createdOnce(t, c, "User", s, newStore(t), keys.Admin.Users, u, func() (keys.User, error) { return newStore(t).GetUser(c, u.ID) })
	if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindUser, ID: u.ID}, Nanos: 2_000_000_000, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	up := keys.User{ID: u.ID, Role: keys.RoleProxyAdminViewer, Email: "b@example.com", CreatedAt: time.Unix(1, 0)}
	got, err := s.Users().Update(c, up)
	if err != nil || got.Email != "b@example.com" || got.Role != keys.RoleProxyAdminViewer || got.Spend != 2 || !got.CreatedAt.Equal(when) || got.Models != nil {
		t.Fatalf("UpdateUser = %+v, %v", got, err)
	}
	list, err := s.Users().List(c)
	if err != nil || !slices.ContainsFunc(list, func(x keys.User) bool { return x.ID == u.ID && x.Spend == 2 }) {
		t.Fatalf("ListUsers = %+v, %v", list, err)
	}
	mustDelete(t, c, s, keys.Ref{Kind: keys.KindUser, ID: u.ID}, func() error { return errOf(s.GetUser(c, u.ID)) })
	// Deleted with its spend: re-created, it starts at zero.
	if err := s.Users().Create(c, keys.User{ID: u.ID}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetUser(c, u.ID); got.Spend != 0 || got.Role != keys.RoleInternalUser {
		t.Fatalf("re-created user = %+v (want no spend, default role internal_user)", got)
	}
}

func testEndUsers(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	e := keys.EndUser{ID: id("customer"), Alias: "acme", AllowedModelRegion: "eu", CreatedAt: when, UpdatedAt: when, Settings: keys.Settings{RPMLimit: 3, TPMLimit: 30,
		Budget: keys.Budget{MaxBudget: usd(1), Duration: "1h"}}}
	createdOnce(t, c, "EndUser", s, s, keys.Admin.EndUsers, e, func() (keys.EndUser, error) { return newStore(t).GetEndUser(c, e.ID) })
	at := time.Now()
	if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindEndUser, ID: e.ID}, Nanos: 1_000_000_000, At: at}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetEndUser(c, e.ID)
	if err != nil || got.Spend != 1 || !got.Exceeded(at) {
		t.Fatalf("end user after spend = %+v, %v (want spend 1, exceeded)", got, err)
	}
	if err := s.Block(c, keys.Ref{Kind: keys.KindEndUser, ID: e.ID}, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetEndUser(c, e.ID); !got.Blocked {
		t.Fatal("Block: end user not blocked")
	}
	up := keys.EndUser{ID: e.ID, Alias: "acme2", AllowedModelRegion: "us", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(10)}}}
	if got, err := s.EndUsers().Update(c, up); err != nil || got.Alias != "acme2" || got.AllowedModelRegion != "us" || got.Spend != 1 || got.Blocked || !got.CreatedAt.Equal(when) {
		t.Fatalf("UpdateEndUser = %+v, %v", got, err)
	}
	if err := s.EndUsers().Create(c, keys.EndUser{ID: id("customer"), AllowedModelRegion: "asia"}); !errors.Is(err, keys.ErrInvalid) {
		t.Fatalf("CreateEndUser with region asia: %v, want ErrInvalid", err)
	}
	list, err := s.EndUsers().List(c)
	if err != nil || !slices.ContainsFunc(list, func(x keys.EndUser) bool { return x.ID == e.ID && x.Spend == 1 }) {
		t.Fatalf("ListEndUsers = %+v, %v", list, err)
	}
	mustDelete(t, c, s, keys.Ref{Kind: keys.KindEndUser, ID: e.ID}, func() error { return errOf(s.GetEndUser(c, e.ID)) })
	if teams, err := s.Teams().List(c); err != nil {
		t.Fatalf("ListTeams: %v (%d)", err, len(teams))
	}
}

func testAdminNotFound(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	h, missing := keys.HashSecret(id("missing")), id("missing")
	for _, tt := range []struct {
		name string
		call func() error
	}{
		{"GetKeyByAlias", func() error { _, err := s.GetKeyByAlias(c, missing); return err }},
		{"GetKeyByAlias empty", func() error { _, err := s.GetKeyByAlias(c, ""); return err }},
		{"ArchiveKey", func() error { _, err := s.ArchiveKey(c, h, "x"); return err }},
		{"RegenerateKey", func() error {
			_, err := s.RegenerateKey(c, h, keys.Key{Hash: keys.HashSecret(id("sk"))})
			return err
		}},
		{"GetUser", func() error { _, err := s.GetUser(c, missing); return err }},
		{"UpdateUser", func() error { _, err := s.Users().Update(c, keys.User{ID: missing}); return err }},
		{"DeleteUser", func() error { return s.Delete(c, keys.Ref{Kind: keys.KindUser, ID: missing}) }},
		{"GetMember", func() error { _, err := s.GetMember(c, keys.KindTeam, missing, missing); return err }},
		{"UpdateMember", func() error {
			_, err := s.UpdateMember(c, keys.Member{Group: keys.KindTeam, GroupID: missing, UserID: missing, Role: keys.MemberUser})
			return err
		}},
		{"RemoveMember", func() error { return s.RemoveMember(c, keys.KindTeam, missing, missing) }},
		{"GetEndUser", func() error { _, err := s.GetEndUser(c, missing); return err }},
		{"UpdateEndUser", func() error { _, err := s.EndUsers().Update(c, keys.EndUser{ID: missing}); return err }},
		{"DeleteEndUser", func() error { return s.Delete(c, keys.Ref{Kind: keys.KindEndUser, ID: missing}) }},
		{"BlockEndUser", func() error { return s.Block(c, keys.Ref{Kind: keys.KindEndUser, ID: missing}, true) }},
	} {
		t.Run(tt.name, func(t *testing.T) { absent(t, tt.name, tt.call()) })
	}
	absent(t, "failed writes created the user", errOf(s.GetUser(c, missing)))
	absent(t, "failed writes created the end user", errOf(s.GetEndUser(c, missing)))
}

func testAdminInvalid(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	team := id("team")
	if err := s.Teams().Create(c, keys.Team{ID: team}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		call func() error
	}{
		{"user role", func() error { return s.Users().Create(c, keys.User{ID: id("u"), Role: "root"}) }},
		{"user id", func() error { return s.Users().Create(c, keys.User{}) }},
		{"user rpm", func() error {
			return s.Users().Create(c, keys.User{ID: id("u"), Settings: keys.Settings{RPMLimit: -1}})
		}},
		{"user metadata", func() error {
			return s.Users().Create(c, keys.User{ID: id("u"), Settings: keys.Settings{Metadata: json.RawMessage(`[1]`)}})
		}},
		{"key metadata", func() error {
			return s.CreateKey(c, keys.Key{Hash: keys.HashSecret(id("sk")), Settings: keys.Settings{Metadata: json.RawMessage(`"x"`)}})
		}},
		{"team metadata", func() error {
			return s.Teams().Create(c, keys.Team{ID: id("t"), Settings: keys.Settings{Metadata: json.RawMessage(`{`)}})
		}},
		{"member role", func() error {
			return s.AddMember(c, keys.Member{Group: keys.KindTeam, GroupID: team, UserID: id("u"), Role: "owner"})
		}},
		{"member budget", func() error {
			return s.AddMember(c, keys.Member{Group: keys.KindTeam, GroupID: team, UserID: id("u"), Role: keys.MemberUser, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(-1)}}})
		}},
		{"end user id", func() error { return s.EndUsers().Create(c, keys.EndUser{}) }},
		{"end user tpm", func() error {
			return s.EndUsers().Create(c, keys.EndUser{ID: id("e"), Settings: keys.Settings{TPMLimit: -1}})
		}},
		{"end user duration", func() error {
			return s.EndUsers().Create(c, keys.EndUser{ID: id("e"), Settings: keys.Settings{Budget: keys.Budget{Duration: "fortnight"}}})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, keys.ErrInvalid) {
				t.Fatalf("%v, want ErrInvalid", err)
			}
		})
	}
}

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
