package keystest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// group is what the membership tests need of a kind of group.
type group struct {
	kind        keys.Kind
	admin, user string // two of its member roles
}

var groups = []group{{keys.KindTeam, keys.MemberAdmin, keys.MemberUser}, {keys.KindOrg, keys.OrgAdmin, keys.OrgInternalUser}}

func (g group) create(c context.Context, s Store, id string) error {
	if g.kind == keys.KindOrg {
		return s.CreateOrganization(c, keys.Organization{ID: id, Alias: "o"})
	}
	return s.CreateTeam(c, keys.Team{ID: id, Alias: "t"})
}

// members reads the group's list of its members.
func (g group) members(c context.Context, s Store, id string) ([]keys.TeamMember, error) {
	if g.kind == keys.KindOrg {
		o, err := s.GetOrganization(c, id)
		return o.Members, err
	}
	t, err := s.GetTeam(c, id)
	return t.Members, err
}

// userGroups is u's list of its groups of this kind.
func (g group) userGroups(u keys.User) []string {
	if g.kind == keys.KindOrg {
		return u.Organizations
	}
	return u.Teams
}

// forGroups runs test once per kind of group.
func forGroups(t *testing.T, newStore func(t *testing.T) Store, test func(t *testing.T, newStore func(t *testing.T) Store, g group)) {
	for _, g := range groups {
		t.Run(string(g.kind), func(t *testing.T) { test(t, newStore, g) })
	}
}

// testMembers: a membership of a team or an organization is written in
// the membership, the group's members and the user's groups together,
// carries its own budget and spend, and ends in all three (by
// RemoveMember, or deleting the user or the group).
func testMembers(t *testing.T, newStore func(t *testing.T) Store) {
	forGroups(t, newStore, testGroupMembers)
}

func testGroupMembers(t *testing.T, newStore func(t *testing.T) Store, g group) {
	s, c := newStore(t), ctx(t)
	gid, user, other := id(string(g.kind)), id("user"), id("user")
	absent(t, "AddMember to a missing group", s.AddMember(c, keys.Member{Group: g.kind, GroupID: gid, UserID: user, Role: g.user}))
	absent(t, "a user created for a refused membership", errOf(s.GetUser(c, user)))
	if err := g.create(c, s, gid); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(c, keys.User{ID: other, Role: keys.RoleInternalUserViewer}); err != nil {
		t.Fatal(err)
	}
	m := keys.Member{Group: g.kind, GroupID: gid, UserID: user, Role: g.admin, Email: "u@example.com", CreatedAt: when, UpdatedAt: when, AddedBy: "admin-1",
		Settings: keys.Settings{BudgetID: "b-1", Budget: keys.Budget{MaxBudget: usd(1)}}}
	if err := s.AddMember(c, m); err != nil {
		t.Fatal(err)
	}
	if err := newStore(t).AddMember(c, m); !errors.Is(err, keys.ErrExists) {
		t.Fatalf("second AddMember: %v", err)
	}
	if err := s.AddMember(c, keys.Member{Group: g.kind, GroupID: gid, UserID: other, Role: g.user}); err != nil {
		t.Fatal(err)
	}
	want := m.Stored() // a team membership keeps no UpdatedAt
	if got, err := newStore(t).GetMember(c, g.kind, gid, user); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("GetMember = %+v, %v\nwant %+v", got, err, want)
	}
	if g.kind == keys.KindOrg && want.UpdatedAt.IsZero() || g.kind == keys.KindTeam && !want.UpdatedAt.IsZero() {
		t.Fatalf("Stored() = %+v: an organization membership keeps UpdatedAt, a team's does not", want)
	}
	if got, err := s.GetMember(c, g.kind, gid, id("nobody")); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("GetMember of a non-member = %+v, %v", got, err)
	}
	// The same ids in the other kind of group name no membership.
	for _, o := range groups {
		if o.kind != g.kind {
			absent(t, "the membership read as the other kind's", errOf(s.GetMember(c, o.kind, gid, user)))
		}
	}
	wantList := []keys.TeamMember{{UserID: user, Email: "u@example.com", Role: g.admin}, {UserID: other, Role: g.user}}
	if got, err := g.members(c, s, gid); err != nil || !reflect.DeepEqual(got, wantList) {
		t.Fatalf("group members = %+v, %v; want %+v", got, err, wantList)
	}
	// The user that did not exist was created as an internal user with the email.
	if u, err := s.GetUser(c, user); err != nil || u.Role != keys.RoleInternalUser || u.Email != "u@example.com" || !slices.Equal(g.userGroups(u), []string{gid}) {
		t.Fatalf("member's user = %+v, %v", u, err)
	}
	if u, _ := s.GetUser(c, other); u.Role != keys.RoleInternalUserViewer || !slices.Equal(g.userGroups(u), []string{gid}) {
		t.Fatalf("existing user after AddMember = %+v", u)
	}
	// Spend of a membership, on its own record.
	if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: m.Ref(), Nanos: 500_000_000, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	up := m
	up.Role, up.MaxBudget, up.BudgetID, up.UpdatedAt = g.user, usd(2), "", when.Add(time.Minute)
	got, err := s.UpdateMember(c, up)
	if err != nil || got.Role != g.user || *got.MaxBudget != 2 || got.Spend != 0.5 || got.BudgetID != "" || !got.CreatedAt.Equal(when) || got.AddedBy != "admin-1" || !got.UpdatedAt.Equal(up.Stored().UpdatedAt) {
		t.Fatalf("UpdateMember = %+v, %v", got, err)
	}
	if l, _ := g.members(c, newStore(t), gid); l[0].Role != g.user {
		t.Fatalf("group members after UpdateMember = %+v", l)
	}
	invalidParam(t, errOf(s.UpdateMember(c, keys.Member{Group: g.kind, GroupID: gid, UserID: user, Role: "owner"})), "role")
	absent(t, "UpdateMember of a non-member", errOf(s.UpdateMember(c, keys.Member{Group: g.kind, GroupID: gid, UserID: id("x"), Role: g.user})))

	if err := s.RemoveMember(c, g.kind, gid, user); err != nil {
		t.Fatal(err)
	}
	absent(t, "second RemoveMember", s.RemoveMember(c, g.kind, gid, user))
	absent(t, "GetMember after RemoveMember", errOf(s.GetMember(c, g.kind, gid, user)))
	if u, _ := s.GetUser(c, user); len(g.userGroups(u)) != 0 {
		t.Fatalf("user after RemoveMember = %+v", u)
	}
	if l, _ := g.members(c, s, gid); len(l) != 1 || l[0].UserID != other {
		t.Fatalf("group members after RemoveMember = %+v", l)
	}
	// Deleting a user ends its memberships; deleting the group ends the rest.
	if err := s.AddMember(c, keys.Member{Group: g.kind, GroupID: gid, UserID: user, Role: g.user}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(c, keys.Ref{Kind: keys.KindUser, ID: user}); err != nil {
		t.Fatal(err)
	}
	if l, _ := g.members(c, s, gid); len(l) != 1 {
		t.Fatalf("deleted user still a member: %+v", l)
	}
	absent(t, "membership of a deleted user", errOf(s.GetMember(c, g.kind, gid, user)))
	mustDelete(t, c, s, keys.Ref{Kind: g.kind, ID: gid}, func() error { _, err := g.members(c, s, gid); return err })
	if u, _ := s.GetUser(c, other); len(g.userGroups(u)) != 0 {
		t.Fatalf("user after its group's Delete = %+v", u)
	}
	absent(t, "membership of a deleted group", errOf(s.GetMember(c, g.kind, gid, other)))
}

// testConcurrentMembers: members added at once from two instances are all
// listed on the group and on their users (the membership lists are
// written under a condition on the list read, then retried).
func testConcurrentMembers(t *testing.T, newStore func(t *testing.T) Store) {
	forGroups(t, newStore, testConcurrentGroupMembers)
}

func testConcurrentGroupMembers(t *testing.T, newStore func(t *testing.T) Store, g group) {
	s1, c := newStore(t), ctx(t)
	s2 := newStore(t)
	gid := id(string(g.kind))
	if err := g.create(c, s1, gid); err != nil {
		t.Fatal(err)
	}
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	users := make([]string, n)
	for i := range n {
		users[i] = fmt.Sprintf("%s-u%d", gid, i)
		s := s1
		if i%2 == 1 {
			s = s2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.AddMember(c, keys.Member{Group: g.kind, GroupID: gid, UserID: users[i], Role: g.user})
		}()
	}
	wg.Wait()
	members, err := g.members(c, s1, gid)
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range users {
		if errs[i] != nil {
			if errors.Is(errs[i], keys.ErrUnavailable) {
				continue // gave up after its retries: then it must be absent
			}
			t.Fatalf("AddMember %s: %v", u, errs[i])
		}
		if !slices.ContainsFunc(members, func(m keys.TeamMember) bool { return m.UserID == u && m.Role == g.user }) {
			t.Errorf("member %s missing from the group's %d members", u, len(members))
		}
		if usr, err := s2.GetUser(c, u); err != nil || !slices.Equal(g.userGroups(usr), []string{gid}) {
			t.Errorf("user %s = %+v, %v", u, usr, err)
		}
	}
	for _, m := range members {
		if i := slices.Index(users, m.UserID); i < 0 || errs[i] != nil {
			t.Errorf("group lists %s, which was not added", m.UserID)
		}
	}
}
