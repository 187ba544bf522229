package keystest

import (
	"reflect"
	"testing"

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
	for _, err := range []error{s.CreateKey(c, k), s.CreateTeam(c, tm), s.CreateUser(c, u)} {
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
	if got, err := s.UpdateTeam(c, gotT); err != nil || got.Aliases != nil {
		t.Fatalf("UpdateTeam without aliases = %v, %v; want none", got.Aliases, err)
	}
	if got, err := other.UpdateUser(c, gotU); err != nil || got.Aliases != nil {
		t.Fatalf("UpdateUser with empty aliases = %v, %v; want none", got.Aliases, err)
	}
	if got, err := other.GetUser(c, u.ID); err != nil || got.Aliases != nil {
		t.Fatalf("GetUser after removing aliases = %v, %v; want none", got.Aliases, err)
	}

	for _, bad := range []map[string]string{{"": "gpt-4o"}, {"my-gpt": ""}} {
		invalidParam(t, s.CreateKey(c, keys.Key{Hash: keys.HashSecret(id("sk")), Settings: keys.Settings{Aliases: bad}}), "aliases")
		invalidParam(t, errOf(s.UpdateTeam(c, keys.Team{ID: tm.ID, Settings: keys.Settings{Aliases: bad}})), "aliases")
	}
	if got, err := s.GetTeam(c, tm.ID); err != nil || got.Aliases != nil {
		t.Fatalf("a refused update changed the team: %v, %v", got.Aliases, err)
	}
}
