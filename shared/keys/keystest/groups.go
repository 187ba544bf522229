package keystest

import (
	"context"
	"encoding/json"
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
		return s.Organizations().Create(c, keys.Organization{ID: id, Alias: "o"})
	}
	return s.Teams().Create(c, keys.Team{ID: id, Alias: "t"})
}

// withMember creates a group of kind g (keys.KindTeam or keys.KindOrg) and
// makes a new user a member of it with role; it returns their ids.
func withMember(t *testing.T, c context.Context, s Store, g keys.Kind, role string) (group, user string) {
	t.Helper()
	group, user = id(string(g)), id("user")
	create := func() error { return s.Teams().Create(c, keys.Team{ID: group}) }
	if g == keys.KindOrg {
		create = func() error { return s.Organizations().Create(c, keys.Organization{ID: group}) }
	}
	if err := create(); err != nil {
		t.Fatal(err)
	}
	if err := s.AddMember(c, keys.Member{Group: g, GroupID: group, UserID: user, Role: role}); err != nil {
		t.Fatal(err)
	}
	return group, user
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
	if err := s.Users().Create(c, keys.User{ID: other, Role: keys.RoleInternalUserViewer}); err != nil {
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

// testOrgs: an organization reads back as written (budget_id included),
// from another instance too; updates keep its creator, teams and members;
// it carries spend like every record; it is listed and deleted.
func testOrgs(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	o := keys.Organization{
		ID: id("org"), Alias: "Acme", CreatedAt: when, UpdatedAt: when, CreatedBy: "admin-1", UpdatedBy: "admin-1",
		Settings: keys.Settings{Models: []string{"gpt-4o"}, RPMLimit: 10, TPMLimit: 1000, MaxParallel: i64(3), BudgetID: "budget-1",
			Metadata: json.RawMessage(`{"tier":"gold"}`), Budget: keys.Budget{MaxBudget: usd(100), SoftBudget: usd(80), Duration: "30d"}},
	}
	createdOnce(t, c, "Organization", s, newStore(t), keys.Admin.Organizations, o, func() (keys.Organization, error) { return newStore(t).GetOrganization(c, o.ID) })
	team := id("team")
	if err := s.Teams().Create(c, keys.Team{ID: team, OrganizationID: o.ID}); err != nil {
		t.Fatal(err)
	}
	user := id("user")
	if err := s.AddMember(c, keys.Member{Group: keys.KindOrg, GroupID: o.ID, UserID: user, Role: keys.OrgAdmin}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2030, 3, 10, 0, 0, 0, 0, time.UTC)
	if _, err := s.ApplySpend(c, []keys.SpendDelta{
		{Ref: keys.Ref{Kind: keys.KindOrg, ID: o.ID}, Nanos: 2_500_000_000, At: at},
		{Ref: keys.Member{Group: keys.KindOrg, GroupID: o.ID, UserID: user}.Ref(), Nanos: 500_000_000, At: at},
	}); err != nil {
		t.Fatal(err)
	}
	up := keys.Organization{ID: o.ID, Alias: "Acme 2", UpdatedAt: when.Add(time.Hour), UpdatedBy: "admin-2", CreatedBy: "someone-else", CreatedAt: time.Unix(1, 0),
		Settings: keys.Settings{Models: []string{"m2"}, Budget: keys.Budget{MaxBudget: usd(5), Duration: "30d"}}}
	got, err := s.Organizations().Update(c, up)
	if err != nil {
		t.Fatal(err)
	}
	if got.Alias != "Acme 2" || got.UpdatedBy != "admin-2" || got.CreatedBy != "admin-1" || !got.CreatedAt.Equal(when) ||
		got.Spend != 2.5 || got.BudgetID != "" || got.MaxParallel != nil || !slices.Equal(got.Models, []string{"m2"}) ||
		!slices.Equal(got.Teams, []string{team}) || got.Role(user) != keys.OrgAdmin {
		t.Fatalf("UpdateOrganization = %+v", got)
	}
	if m, err := newStore(t).GetMember(c, keys.KindOrg, o.ID, user); err != nil || m.Spend != 0.5 || m.Role != keys.OrgAdmin {
		t.Fatalf("GetOrgMember = %+v, %v", m, err)
	}
	list, err := s.Organizations().List(c)
	if err != nil || !slices.ContainsFunc(list, func(x keys.Organization) bool { return x.ID == o.ID && x.Spend == 2.5 && len(x.Teams) == 1 }) {
		t.Fatalf("ListOrganizations = %+v, %v", list, err)
	}
	absent(t, "UpdateOrganization of a missing one", errOf(s.Organizations().Update(c, keys.Organization{ID: id("missing")})))
}

// testOrgTeams: a team's organization must exist, and lists the team
// while the team names it; an organization with teams is not deleted.
func testOrgTeams(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	a, b := id("org-a"), id("org-b")
	for _, o := range []string{a, b} {
		if err := s.Organizations().Create(c, keys.Organization{ID: o}); err != nil {
			t.Fatal(err)
		}
	}
	teams := func(org string) []string {
		t.Helper()
		o, err := newStore(t).GetOrganization(c, org)
		if err != nil {
			t.Fatal(err)
		}
		return o.Teams
	}
	t1, t2 := id("t1"), id("t2")
	invalidParam(t, s.Teams().Create(c, keys.Team{ID: t1, OrganizationID: id("missing")}), "organization_id")
	absent(t, "a team refused for its organization was stored", errOf(s.GetTeam(c, t1)))
	if err := s.Teams().Create(c, keys.Team{ID: t1, OrganizationID: a}); err != nil {
		t.Fatal(err)
	}
	if err := s.Teams().Create(c, keys.Team{ID: t2, OrganizationID: a}); err != nil {
		t.Fatal(err)
	}
	if err := s.Teams().Create(c, keys.Team{ID: t2, OrganizationID: b}); !errors.Is(err, keys.ErrExists) {
		t.Fatalf("CreateTeam of a taken id: %v", err)
	}
	if got, want := teams(a), slices.Sorted(slices.Values([]string{t1, t2})); !slices.Equal(got, want) {
		t.Fatalf("organization teams = %v, want %v", got, want)
	}
	if len(teams(b)) != 0 {
		t.Fatalf("a refused team joined organization b: %v", teams(b))
	}
	if got, err := newStore(t).GetTeam(c, t1); err != nil || got.OrganizationID != a {
		t.Fatalf("GetTeam = %+v, %v", got, err)
	}
	// Moving a team moves it between the organizations' lists; an update
	// to a missing organization changes nothing.
	if got, err := s.Teams().Update(c, keys.Team{ID: t2, OrganizationID: b, Alias: "moved"}); err != nil || got.OrganizationID != b || got.Alias != "moved" {
		t.Fatalf("UpdateTeam moving organizations = %+v, %v", got, err)
	}
	if !slices.Equal(teams(a), []string{t1}) || !slices.Equal(teams(b), []string{t2}) {
		t.Fatalf("after the move: a %v, b %v", teams(a), teams(b))
	}
	invalidParam(t, errOf(s.Teams().Update(c, keys.Team{ID: t2, OrganizationID: id("missing")})), "organization_id")
	if got, _ := s.GetTeam(c, t2); got.OrganizationID != b || got.Alias != "moved" {
		t.Fatalf("a refused update changed the team: %+v", got)
	}
	if got, err := s.Teams().Update(c, keys.Team{ID: t2, Alias: "alone"}); err != nil || got.OrganizationID != "" {
		t.Fatalf("UpdateTeam leaving its organization = %+v, %v", got, err)
	}
	if len(teams(b)) != 0 {
		t.Fatalf("organization b still lists %v", teams(b))
	}
	// An organization with teams is refused deletion (LiteLLM too), and
	// stays; without them it goes.
	err := s.Delete(c, keys.Ref{Kind: keys.KindOrg, ID: a})
	if !errors.Is(err, keys.ErrOrgHasTeams) || !errors.Is(err, keys.ErrInvalid) {
		t.Fatalf("Delete of an organization with a team: %v, want ErrOrgHasTeams", err)
	}
	if len(teams(a)) != 1 {
		t.Fatal("the refused deletion changed the organization")
	}
	mustDelete(t, c, s, keys.Ref{Kind: keys.KindTeam, ID: t1}, func() error { return errOf(s.GetTeam(c, t1)) })
	if len(teams(a)) != 0 {
		t.Fatalf("a deleted team is still listed: %v", teams(a))
	}
	mustDelete(t, c, s, keys.Ref{Kind: keys.KindOrg, ID: a}, func() error { return errOf(s.GetOrganization(c, a)) })
	invalidParam(t, s.Teams().Create(c, keys.Team{ID: id("t3"), OrganizationID: a}), "organization_id")
	absent(t, "Delete of a deleted organization", s.Delete(c, keys.Ref{Kind: keys.KindOrg, ID: a}))
}

// testOrgInvalid: hostile ids and roles are refused naming the field; reads
// through them find nothing.
func testOrgInvalid(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	org, user := withMember(t, c, s, keys.KindOrg, keys.OrgAdmin)
	for name, bad := range hostileIDs {
		t.Run(name, func(t *testing.T) {
			invalidParam(t, s.Organizations().Create(c, keys.Organization{ID: bad}), "organization_id")
			invalidParam(t, s.Teams().Create(c, keys.Team{ID: id("t"), OrganizationID: bad}), "organization_id")
			invalidParam(t, s.AddMember(c, keys.Member{Group: keys.KindOrg, GroupID: bad, UserID: user, Role: keys.OrgAdmin}), "organization_id")
			invalidParam(t, s.AddMember(c, keys.Member{Group: keys.KindOrg, GroupID: org, UserID: bad, Role: keys.OrgAdmin}), "user_id")
			invalidParam(t, s.Organizations().Create(c, keys.Organization{ID: id("o"), Settings: keys.Settings{BudgetID: bad}}), "budget_id")
			absent(t, "GetOrganization", errOf(s.GetOrganization(c, bad)))
			absent(t, "GetOrgMember", errOf(s.GetMember(c, keys.KindOrg, org, bad)))
			absent(t, "RemoveOrgMember", s.RemoveMember(c, keys.KindOrg, org, bad))
			absent(t, "RemoveOrgMember org", s.RemoveMember(c, keys.KindOrg, bad, user))
		})
	}
	// No organization org#x exists for org's member x#user to reach.
	invalidParam(t, s.Organizations().Create(c, keys.Organization{ID: org + "#" + user}), "organization_id")
	for _, role := range []string{"", "admin", "proxy_admin"} {
		invalidParam(t, s.AddMember(c, keys.Member{Group: keys.KindOrg, GroupID: org, UserID: id("u"), Role: role}), "role")
	}
	if err := s.Organizations().Create(c, keys.Organization{ID: id("o"), Settings: keys.Settings{RPMLimit: -1}}); !errors.Is(err, keys.ErrInvalid) {
		t.Fatalf("negative rpm_limit: %v", err)
	}
	if m, err := s.GetMember(c, keys.KindOrg, org, user); err != nil || m.Role != keys.OrgAdmin {
		t.Fatalf("the real membership: %+v, %v", m, err)
	}
}

// testOrgDeleteRace: a team created in an organization while another
// instance deletes it either joins it (and the deletion is refused) or is
// refused (and the organization is gone): never a team in a deleted
// organization, nor an organization whose teams list misses one.
func testOrgDeleteRace(t *testing.T, newStore func(t *testing.T) Store) {
	s1, c := newStore(t), ctx(t)
	s2 := newStore(t)
	for round := range 4 {
		org, team := id("org"), id("team")
		if err := s1.Organizations().Create(c, keys.Organization{ID: org}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var createErr, deleteErr error
		wg.Add(2)
		go func() { defer wg.Done(); createErr = s2.Teams().Create(c, keys.Team{ID: team, OrganizationID: org}) }()
		go func() { defer wg.Done(); deleteErr = s1.Delete(c, keys.Ref{Kind: keys.KindOrg, ID: org}) }()
		wg.Wait()
		o, orgErr := s1.GetOrganization(c, org)
		tm, teamErr := s1.GetTeam(c, team)
		lost := func(err error) bool { return errors.Is(err, keys.ErrUnavailable) } // a transaction conflict: it did nothing
		switch {
		case orgErr == nil && teamErr == nil:
			if tm.OrganizationID != org || !slices.Equal(o.Teams, []string{team}) || createErr != nil || !(errors.Is(deleteErr, keys.ErrOrgHasTeams) || lost(deleteErr)) {
				t.Fatalf("round %d: organization kept with the team: teams %v; team %+v; create %v; delete %v", round, o.Teams, tm, createErr, deleteErr)
			}
		case orgErr == nil:
			if !errors.Is(teamErr, keys.ErrNotFound) || len(o.Teams) != 0 || !lost(createErr) || !lost(deleteErr) {
				t.Fatalf("round %d: organization kept without the team: teams %v; team %v; create %v; delete %v", round, o.Teams, teamErr, createErr, deleteErr)
			}
		case errors.Is(orgErr, keys.ErrNotFound):
			if deleteErr != nil || !errors.Is(teamErr, keys.ErrNotFound) || !(errors.Is(createErr, keys.ErrInvalid) || lost(createErr)) {
				t.Fatalf("round %d: organization deleted: team %+v, %v; create %v; delete %v", round, tm, teamErr, createErr, deleteErr)
			}
		default:
			t.Fatal(orgErr)
		}
	}
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
