package keyauth_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keyauth"
	"github.com/sluice-gw/sluice/shared/keys"
)

// failing is a store that cannot answer for one record kind.
type failing struct {
	keys.Reader
	kind keys.Kind
}

var errDown = errors.New("down")

func (f failing) GetKey(ctx context.Context, h string) (keys.Key, error) {
	if f.kind == keys.KindKey {
		return keys.Key{}, errDown
	}
	return f.Reader.GetKey(ctx, h)
}

func (f failing) GetTeam(ctx context.Context, id string) (keys.Team, error) {
	if f.kind == keys.KindTeam {
		return keys.Team{}, errDown
	}
	return f.Reader.GetTeam(ctx, id)
}

func (f failing) GetUser(ctx context.Context, id string) (keys.User, error) {
	if f.kind == keys.KindUser {
		return keys.User{}, errDown
	}
	return f.Reader.GetUser(ctx, id)
}

func (f failing) GetMember(ctx context.Context, g keys.Kind, team, user string) (keys.Member, error) {
	if f.kind == keys.KindMember {
		return keys.Member{}, errDown
	}
	return f.Reader.GetMember(ctx, g, team, user)
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ms := keys.NewMemory()
	usd := func(v float64) keys.Settings { return keys.Settings{Budget: keys.Budget{MaxBudget: &v}} }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ms.Teams().Create(ctx, keys.Team{ID: "t"}))
	must(ms.Teams().Create(ctx, keys.Team{ID: "t-blocked", Settings: keys.Settings{Blocked: true}}))
	must(ms.Teams().Create(ctx, keys.Team{ID: "t-broke", Settings: usd(0)}))
	must(ms.Users().Create(ctx, keys.User{ID: "u"}))
	must(ms.Users().Create(ctx, keys.User{ID: "u-broke", Settings: usd(0)}))
	must(ms.AddMember(ctx, keys.Member{Group: keys.KindTeam, GroupID: "t", UserID: "u", Role: keys.MemberUser}))
	must(ms.AddMember(ctx, keys.Member{Group: keys.KindTeam, GroupID: "t", UserID: "u-member-broke", Role: keys.MemberUser, Settings: usd(0)}))
	key := func(secret string, k keys.Key) string {
		k.Hash = keys.HashSecret(secret)
		must(ms.CreateKey(ctx, k))
		return secret
	}
	for _, tt := range []struct {
		name       string
		secret     string
		down       keys.Kind
		reason     keyauth.Reason
		scope, msg string
		kind       apierr.Kind
	}{
		{"ok", key("sk-ok", keys.Key{TeamID: "t", UserID: "u"}), "", 0, "", "", 0},
		{"user without record", key("sk-ghost", keys.Key{UserID: "nobody"}), "", 0, "", "", 0},
		{"unknown", "sk-unknown", "", keyauth.Unknown, "key", "Authentication Error, Invalid proxy server token passed. (invalid API key)", apierr.Unauthorized},
		{"key store down", "sk-ok", keys.KindKey, keyauth.Unavailable, "key", "could not check the API key; try again", apierr.Unavailable},
		{"blocked", key("sk-blocked", keys.Key{Settings: keys.Settings{Blocked: true}}), "", keyauth.Blocked, "key", "Authentication Error, Key is blocked. Update via `/key/unblock` if you're an admin.", apierr.Unauthorized},
		{"expired", key("sk-expired", keys.Key{ExpiresAt: now}), "", keyauth.Expired, "key", "Authentication Error - Expired Key. Key Expiry time " + now.UTC().Format(time.RFC3339) + " and current time " + now.UTC().Format(time.RFC3339), apierr.Unauthorized},
		{"key budget", key("sk-broke", keys.Key{Settings: usd(0)}), "", keyauth.OverBudget, "key",
			"Budget has been exceeded! Key=" + keys.HashSecret("sk-broke")[:12] + " Current cost: 0, Max budget: 0", apierr.BudgetExceeded},
		{"team gone", key("sk-orphan", keys.Key{TeamID: "gone"}), "", keyauth.TeamGone, "team", `the key's team "gone" no longer exists`, apierr.Unauthorized},
		{"team down", "sk-ok", keys.KindTeam, keyauth.Unavailable, "team", "could not check the API key's team; try again", apierr.Unavailable},
		{"team blocked", key("sk-tb", keys.Key{TeamID: "t-blocked"}), "", keyauth.Blocked, "team", "team t-blocked is blocked", apierr.Unauthorized},
		{"team budget", key("sk-tbroke", keys.Key{TeamID: "t-broke"}), "", keyauth.OverBudget, "team",
			"Budget has been exceeded! Team=t-broke Current cost: 0, Max budget: 0", apierr.BudgetExceeded},
		{"user down", "sk-ok", keys.KindUser, keyauth.Unavailable, "user", "could not check the API key's user; try again", apierr.Unavailable},
		{"user budget", key("sk-ubroke", keys.Key{UserID: "u-broke"}), "", keyauth.OverBudget, "user",
			"ExceededBudget: User=u-broke over budget. Spend=0, Budget=0", apierr.BudgetExceeded},
		{"member down", "sk-ok", keys.KindMember, keyauth.Unavailable, "team_member", "could not check the API key's team membership; try again", apierr.Unavailable},
		{"member budget", key("sk-mbroke", keys.Key{TeamID: "t", UserID: "u-member-broke"}), "", keyauth.OverBudget, "team_member",
			"Budget has been exceeded! Team Member=u-member-broke Team=t Current cost: 0, Max budget: 0", apierr.BudgetExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := keyauth.Authenticator{Keys: failing{ms, tt.down}, Now: func() time.Time { return now }}
			r, err := a.Authenticate(ctx, tt.secret)
			if tt.reason == 0 {
				if err != nil || r.Key.Hash != keys.HashSecret(tt.secret) {
					t.Fatalf("Authenticate = %+v, %v", r, err)
				}
				if k := r.Key; (k.TeamID != "") != (r.Team != nil) || (k.UserID == "u") != (r.User != nil) || (r.Team != nil && r.User != nil) != (r.Member != nil) {
					t.Fatalf("records %+v", r)
				}
				return
			}
			var d *keyauth.Denied
			if !errors.As(err, &d) || d.Reason != tt.reason || d.Scope != tt.scope || d.Err.Message != tt.msg || d.Err.Kind != tt.kind {
				t.Fatalf("Authenticate = %+v, %#v; want %v %s %q (%v)", r, d, tt.reason, tt.scope, tt.msg, tt.kind)
			}
			if apierr.From(err) != d.Err {
				t.Fatal("the client's error is not what the refusal wraps")
			}
		})
	}
}

// A key minted for another user is used only within its bound scope: its
// team, or a team of its organization. The admin API never writes one
// outside it; a record that is (written by hand, or a team moved out of
// the organization since) is refused.
func TestAuthenticateBound(t *testing.T) {
	ctx := context.Background()
	ms := keys.NewMemory()
	for _, err := range []error{
		ms.Organizations().Create(ctx, keys.Organization{ID: "o1"}),
		ms.Teams().Create(ctx, keys.Team{ID: "t1", OrganizationID: "o1"}),
		ms.Teams().Create(ctx, keys.Team{ID: "t2"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		team  string
		bound keys.Bound
		ok    bool
	}{
		{"t1", keys.Bound{}, true},
		{"t1", keys.Bound{By: "a", Team: "t1"}, true},
		{"t1", keys.Bound{By: "a", Org: "o1"}, true},
		{"t2", keys.Bound{By: "a", Team: "t1"}, false},
		{"t2", keys.Bound{By: "a", Org: "o1"}, false},
		{"", keys.Bound{By: "a", Team: "t1"}, false},
	}
	for i, tt := range tests {
		secret := "sk-bound-" + string(rune('a'+i))
		if err := ms.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secret), TeamID: tt.team, Bound: tt.bound}); err != nil {
			t.Fatal(err)
		}
		_, err := (&keyauth.Authenticator{Keys: ms}).Authenticate(ctx, secret)
		var d *keyauth.Denied
		if tt.ok && err != nil || !tt.ok && (!errors.As(err, &d) || d.Err.Kind != apierr.Unauthorized) {
			t.Errorf("key of team %q bound %+v: %v, want ok=%v", tt.team, tt.bound, err, tt.ok)
		}
	}
}

// TestRecordsAll: All walks the records a principal has in one order (key,
// team, user, membership, end user, organization), skips the ones it has
// not, stops when told, and names a membership by keys.MemberID.
func TestRecordsAll(t *testing.T) {
	r := &keyauth.Records{
		Key: &keys.Key{Hash: "h"}, User: &keys.User{ID: "u"}, Member: &keys.Member{GroupID: "t", UserID: "u"},
		Org: &keys.Organization{ID: "o"},
	}
	var got []string
	for rec := range r.All {
		got = append(got, rec.Kind.Scope()+"="+rec.ID())
	}
	want := []string{"key=h", "user=u", "team_member=" + keys.MemberID("t", "u"), "organization=o"}
	if !slices.Equal(got, want) {
		t.Errorf("All walked %v, want %v", got, want)
	}
	for range r.All {
		break // a stop must not panic
	}
	var none *keyauth.Records
	for rec := range none.All {
		t.Errorf("a nil Records walked %v", rec)
	}
}
