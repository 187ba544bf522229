package keystest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// hostileIDs would make two records' keys the same string (the separator
// of member#<team>#<user>), or cannot be part of a key at all.
var hostileIDs = map[string]string{
	"separator":    "q#r",
	"control char": "q\x01r",
	"300 bytes":    strings.Repeat("x", 300),
}

// invalidParam asserts that err is an ErrInvalid naming param.
func invalidParam(t *testing.T, err error, param string) {
	t.Helper()
	var p *apierr.InvalidParam
	if !errors.Is(err, keys.ErrInvalid) || !errors.As(err, &p) || p.Param != param {
		t.Fatalf("%.300v, want ErrInvalid naming %s", err, param)
	}
}

// testHostileIDs: every id and alias that becomes part of a record's key
// is refused with the field named, and no read finds a record through one.
func testHostileIDs(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	team, user := withMember(t, c, s, keys.KindTeam, keys.MemberUser)
	h := keys.HashSecret(id("sk"))
	if err := s.CreateKey(c, keys.Key{Hash: h}); err != nil {
		t.Fatal(err)
	}
	for name, bad := range hostileIDs {
		t.Run(name, func(t *testing.T) {
			for _, tt := range []struct {
				name, param string
				call        func() error
			}{
				{"CreateTeam", "team_id", func() error { return s.Teams().Create(c, keys.Team{ID: bad}) }},
				{"CreateUser", "user_id", func() error { return s.Users().Create(c, keys.User{ID: bad}) }},
				{"CreateEndUser", "user_id", func() error { return s.EndUsers().Create(c, keys.EndUser{ID: bad}) }},
				{"AddMember team", "team_id", func() error {
					return s.AddMember(c, keys.Member{Group: keys.KindTeam, GroupID: bad, UserID: user, Role: keys.MemberUser})
				}},
				{"AddMember user", "user_id", func() error {
					return s.AddMember(c, keys.Member{Group: keys.KindTeam, GroupID: team, UserID: bad, Role: keys.MemberUser})
				}},
				{"UpdateMember", "user_id", func() error {
					return errOf(s.UpdateMember(c, keys.Member{Group: keys.KindTeam, GroupID: team, UserID: bad, Role: keys.MemberAdmin}))
				}},
				{"CreateKey alias", "key_alias", func() error {
					return s.CreateKey(c, keys.Key{Hash: keys.HashSecret(id("sk")), Alias: bad})
				}},
				{"UpdateKey alias", "key_alias", func() error { return errOf(s.UpdateKey(c, keys.Key{Hash: h, Alias: bad})) }},
				{"CreateKey team", "team_id", func() error {
					return s.CreateKey(c, keys.Key{Hash: keys.HashSecret(id("sk")), TeamID: bad})
				}},
				{"CreateKey user", "user_id", func() error {
					return s.CreateKey(c, keys.Key{Hash: keys.HashSecret(id("sk")), UserID: bad})
				}},
				{"CreateBudget", "budget_id", func() error { return s.Budgets().Create(c, keys.BudgetRecord{ID: bad}) }},
				{"CreateEndUser budget_id", "budget_id", func() error {
					return s.EndUsers().Create(c, keys.EndUser{ID: id("e"), Settings: keys.Settings{BudgetID: bad}})
				}},
			} {
				t.Run(tt.name, func(t *testing.T) { invalidParam(t, tt.call(), tt.param) })
			}
			// Reads through a hostile id find nothing (and never fail).
			absent(t, "GetTeam", errOf(s.GetTeam(c, bad)))
			absent(t, "GetUser", errOf(s.GetUser(c, bad)))
			absent(t, "GetEndUser", errOf(s.GetEndUser(c, bad)))
			absent(t, "GetMember", errOf(s.GetMember(c, keys.KindTeam, team, bad)))
			absent(t, "GetKeyByAlias", errOf(s.GetKeyByAlias(c, bad)))
			absent(t, "GetBudget", errOf(s.GetBudget(c, bad)))
			absent(t, "DeleteBudget", s.DeleteBudget(c, bad))
			absent(t, "RemoveMember", s.RemoveMember(c, keys.KindTeam, team, bad))
		})
	}
	// The repro at the store: no team p#q can exist for team p's
	// "member" q#r to reach, and the real membership is untouched.
	invalidParam(t, s.Teams().Create(c, keys.Team{ID: team + "#q"}), "team_id")
	if m, err := s.GetMember(c, keys.KindTeam, team, user); err != nil || m.Role != keys.MemberUser {
		t.Fatalf("the real membership: %+v, %v", m, err)
	}
}

// testOversized: fields past their bounds are ErrInvalid naming the field
// (never a store error), on every write.
func testOversized(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	big := json.RawMessage(`{"k":"` + strings.Repeat("x", 500<<10) + `"}`)
	h := keys.HashSecret(id("sk"))
	if err := s.CreateKey(c, keys.Key{Hash: h}); err != nil {
		t.Fatal(err)
	}
	team := id("t")
	if err := s.Teams().Create(c, keys.Team{ID: team}); err != nil {
		t.Fatal(err)
	}
	names := func(n, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strings.Repeat("m", size) + string(rune('a'+i%26))
		}
		return out
	}
	for _, tt := range []struct {
		name, param string
		call        func() error
	}{
		{"key metadata", "metadata", func() error {
			return s.CreateKey(c, keys.Key{Hash: keys.HashSecret(id("sk")), Settings: keys.Settings{Metadata: big}})
		}},
		{"key alias 300 KB", "key_alias", func() error {
			return s.CreateKey(c, keys.Key{Hash: keys.HashSecret(id("sk")), Alias: strings.Repeat("a", 300<<10)})
		}},
		{"update key metadata", "metadata", func() error {
			return errOf(s.UpdateKey(c, keys.Key{Hash: h, Settings: keys.Settings{Metadata: big}}))
		}},
		{"tags", "tags", func() error { return errOf(s.UpdateKey(c, keys.Key{Hash: h, Tags: names(keys.MaxTags+1, 1)})) }},
		{"models", "models", func() error {
			return errOf(s.UpdateKey(c, keys.Key{Hash: h, Settings: keys.Settings{Models: names(keys.MaxModels+1, 1)}}))
		}},
		{"model name", "models", func() error {
			return errOf(s.UpdateKey(c, keys.Key{Hash: h, Settings: keys.Settings{Models: names(1, keys.MaxNameLen)}}))
		}},
		{"team metadata", "metadata", func() error {
			return errOf(s.Teams().Update(c, keys.Team{ID: team, Settings: keys.Settings{Metadata: big}}))
		}},
		{"team alias", "team_alias", func() error {
			return errOf(s.Teams().Update(c, keys.Team{ID: team, Alias: strings.Repeat("a", keys.MaxIDLen+1)}))
		}},
		{"user metadata", "metadata", func() error {
			return s.Users().Create(c, keys.User{ID: id("u"), Settings: keys.Settings{Metadata: big}})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) { invalidParam(t, tt.call(), tt.param) })
	}
}
