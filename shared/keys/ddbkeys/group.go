package ddbkeys

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// group is a kind of record users are members of: a team or an
// organization. A membership is written in three places, always in one
// TransactWriteItems: its own item (<memberKind>#<group>#<user>), the
// group item's members (L of M {user_id, role, email}) and the user
// item's list of its groups (userAttr).
type group struct {
	kind       keys.Kind // of the group
	memberKind keys.Kind // of its membership items
	userAttr   string    // the user item's list of the groups it is a member of
	userList   func(keys.User) []string
	idAttr     string // the membership item's attribute naming the group
	updated    bool   // a membership item keeps updated_at
}

var (
	teamGroup = group{keys.KindTeam, keys.KindMember, attrTeams, func(u keys.User) []string { return u.Teams }, attrTeamID, false}
	orgGroup  = group{keys.KindOrg, keys.KindOrgMember, attrOrgs, func(u keys.User) []string { return u.Organizations }, attrOrgKey, true}
	groups    = map[keys.Kind]group{keys.KindTeam: teamGroup, keys.KindOrg: orgGroup}
)

func (g group) memberPK(id, user string) string { return refPK(g.memberKind, id+"#"+user) }

func (g group) memberWhat(id, user string) string {
	return whatOf(keys.Ref{Kind: g.memberKind, ID: id + "#" + user})
}

// groupMembers reads the members of the group id (ErrNotFound when it
// does not exist).
func (st *Store) groupMembers(ctx context.Context, g group, id string) ([]keys.TeamMember, error) {
	r := keys.Ref{Kind: g.kind, ID: id}
	if keys.ValidID("id", id) != nil {
		return nil, fmt.Errorf("%s: %w", whatOf(r), keys.ErrNotFound)
	}
	item, err := st.get(ctx, r.String(), whatOf(r))
	if err != nil {
		return nil, err
	}
	return decodeMembers(item), nil
}

// getMembership checks that the membership of user in the group id exists.
func (st *Store) getMembership(ctx context.Context, g group, id, user string) error {
	what := g.memberWhat(id, user)
	if keys.ValidID("id", id) != nil || keys.ValidID("user_id", user) != nil {
		return fmt.Errorf("%s: %w", what, keys.ErrNotFound)
	}
	_, err := st.get(ctx, g.memberPK(id, user), what)
	return err
}

// join writes a new membership of the group id: its item, the group's
// members (conditioned on the list read) and the user's groups (or a new
// internal_user with the entry's email), in one transaction; again when
// the group or the user changed meanwhile.
func (st *Store) join(ctx context.Context, g group, id string, entry keys.TeamMember, item ddb.Item) error {
	what := g.memberWhat(id, entry.UserID)
	for attempt := 0; ; attempt++ {
		members, err := st.groupMembers(ctx, g, id)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(members, func(m keys.TeamMember) bool { return m.UserID == entry.UserID }) {
			return fmt.Errorf("%s: %w", what, keys.ErrExists)
		}
		items := []types.TransactWriteItem{
			put(st.table, item, "attribute_not_exists(pk)", nil),
			st.membersUpdate(refPK(g.kind, id), append(slices.Clip(members), entry), len(members)),
		}
		u, err := st.GetUser(ctx, entry.UserID)
		switch {
		case errors.Is(err, keys.ErrNotFound):
			nu := newUserItem(keys.User{ID: entry.UserID, Email: entry.Email, Role: keys.RoleInternalUser})
			nu[g.userAttr] = ddb.List([]string{id})
			items = append(items, put(st.table, nu, "attribute_not_exists(pk)", nil))
		case err != nil:
			return err
		default:
			list := g.userList(u)
			items = append(items, st.listSet(userPK(u.ID), g.userAttr, ddb.List(append(slices.Clip(list), id)), len(list)))
		}
		err = st.transact(ctx, what, items)
		i, ok := failedAt(err)
		switch {
		case ok && i == 0:
			return fmt.Errorf("%s: %w", what, keys.ErrExists)
		case ok && attempt < 5:
			continue // the group or the user changed meanwhile
		case ok:
			return fmt.Errorf("%s: %w: changed concurrently", what, keys.ErrUnavailable)
		}
		return err
	}
}

// setRole SETs a (the membership's settings and role) on the membership
// of user in the group id, and its role in the group's members, in one
// transaction.
func (st *Store) setRole(ctx context.Context, g group, id, user, role string, a attrs) error {
	what := g.memberWhat(id, user)
	if err := st.getMembership(ctx, g, id, user); err != nil {
		return err
	}
	members, err := st.groupMembers(ctx, g, id)
	if err != nil {
		return err
	}
	read := len(members)
	members = slices.Clone(members)
	for i := range members {
		if members[i].UserID == user {
			members[i].Role = role
		}
	}
	err = st.transact(ctx, what, []types.TransactWriteItem{
		updateItem(st.table, g.memberPK(id, user), a),
		st.membersUpdate(refPK(g.kind, id), members, read),
	})
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: changed concurrently or gone: %w", what, keys.ErrNotFound)
	}
	return err
}

// leave ends the membership of user in the group id in the three places
// it is written, in one transaction.
func (st *Store) leave(ctx context.Context, g group, id, user string) error {
	what := g.memberWhat(id, user)
	members, err := st.groupMembers(ctx, g, id)
	if err != nil {
		return err
	}
	if err := st.getMembership(ctx, g, id, user); err != nil {
		return err
	}
	items := []types.TransactWriteItem{
		del(st.table, g.memberPK(id, user), "attribute_exists(pk)", nil),
		st.membersUpdate(refPK(g.kind, id), without(members, user), len(members)),
	}
	if u, err := st.GetUser(ctx, user); err == nil {
		items = append(items, st.listSet(userPK(user), g.userAttr, ddb.List(slices.DeleteFunc(g.userList(u), func(x string) bool { return x == id })), -1))
	}
	err = st.transact(ctx, what, items)
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: changed concurrently or gone: %w", what, keys.ErrNotFound)
	}
	return err
}

// deleteGroup deletes the memberships of the group id (its members): the
// member items and the group's id in its members' lists, then runs last
// (the group item's deletion) in the same transaction; more than 48
// members take several transactions, last going in the final one.
func (st *Store) deleteGroup(ctx context.Context, g group, id string, members []keys.TeamMember, last []types.TransactWriteItem) error {
	what := whatOf(keys.Ref{Kind: g.kind, ID: id})
	var items []types.TransactWriteItem
	for _, m := range members {
		items = append(items, del(st.table, g.memberPK(id, m.UserID), "", nil))
		if u, err := st.GetUser(ctx, m.UserID); err == nil {
			items = append(items, st.listSet(userPK(u.ID), g.userAttr, ddb.List(slices.DeleteFunc(g.userList(u), func(x string) bool { return x == id })), -1))
		}
		if len(items)+len(last) > 96 {
			if err := st.transact(ctx, what, items); err != nil {
				return err
			}
			items = nil
		}
	}
	return st.transact(ctx, what, append(items, last...))
}

// without returns members without user (a new slice).
func without(members []keys.TeamMember, user string) []keys.TeamMember {
	return slices.DeleteFunc(slices.Clone(members), func(m keys.TeamMember) bool { return m.UserID == user })
}

// membersUpdate SETs the members of the group item pk (listSet).
func (st *Store) membersUpdate(pk string, members []keys.TeamMember, readLen int) types.TransactWriteItem {
	l := make([]types.AttributeValue, len(members))
	for i, m := range members {
		e := ddb.Item{attrUserID: ddb.S(m.UserID), attrRole: ddb.S(m.Role)}
		if m.Email != "" {
			e[attrEmail] = ddb.S(m.Email)
		}
		l[i] = &types.AttributeValueMemberM{Value: e}
	}
	return st.listSet(pk, attrMembers, &types.AttributeValueMemberL{Value: l}, readLen)
}
