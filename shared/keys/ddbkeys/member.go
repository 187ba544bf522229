package ddbkeys

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// A membership's item: pk "member#<team>#<user>", kind "member", its
// settings (settings.go: only the budget is used) and team_id, user_id,
// role (S), email (S, absent when none), created_at (N, epoch ms).
//
// Membership is written in three places (the member item, the team's
// members, the user's teams), always in one TransactWriteItems; deleting
// a team or a user removes its memberships from all three in the same
// transaction (deleteTeam, deleteUser).

// memberAttrs encodes the settings of m (created_at aside).
func memberAttrs(m keys.Member) attrs {
	a := settingsAttrs(m.Settings)
	a.set[attrTeamID] = ddb.S(m.TeamID)
	a.set[attrUserID] = ddb.S(m.UserID)
	a.set[attrRole] = ddb.S(m.Role)
	a.opt(attrEmail, ddb.S(m.Email), m.Email != "")
	return a
}

func decodeMember(item ddb.Item) keys.Member {
	return keys.Member{
		TeamID: ddb.String(item, attrTeamID), UserID: ddb.String(item, attrUserID), Role: ddb.String(item, attrRole),
		Email: ddb.String(item, attrEmail), CreatedAt: getTime(item, attrCreated), Settings: decodeSettings(item),
	}
}

// GetMember implements keys.Reader.
func (st *Store) GetMember(ctx context.Context, team, user string) (keys.Member, error) {
	return read(ctx, st, keys.Ref{Kind: keys.KindMember, ID: keys.MemberID(team, user)}, keys.ValidMember(team, user) == nil, func(_ string, item ddb.Item) keys.Member { return decodeMember(item) })
}

// AddMember implements keys.Admin: the member item, the team's members
// (conditioned on the list read) and the user's teams (or a new user) in
// one transaction.
func (st *Store) AddMember(ctx context.Context, m keys.Member) error {
	if err := m.Validate(); err != nil {
		return err
	}
	what := "member " + keys.MemberID(m.TeamID, m.UserID)
	for attempt := 0; ; attempt++ {
		t, err := st.GetTeam(ctx, m.TeamID)
		if err != nil {
			return err
		}
		if t.Role(m.UserID) != "" {
			return fmt.Errorf("%s: %w", what, keys.ErrExists)
		}
		if m.CreatedAt.IsZero() {
			m.CreatedAt = time.Now()
		}
		items := []types.TransactWriteItem{
			put(st.table, newItem(memberAttrs(m), m.Ref().String(), keys.KindMember, m.CreatedAt), "attribute_not_exists(pk)", nil),
			st.teamMembersUpdate(m.TeamID, append(t.Members, keys.TeamMember{UserID: m.UserID, Email: m.Email, Role: m.Role}), len(t.Members)),
		}
		u, err := st.GetUser(ctx, m.UserID)
		switch {
		case errors.Is(err, keys.ErrNotFound):
			items = append(items, put(st.table, newUserItem(keys.User{ID: m.UserID, Email: m.Email, Role: keys.RoleInternalUser}, m.TeamID), "attribute_not_exists(pk)", nil))
		case err != nil:
			return err
		default:
			items = append(items, st.userTeamsUpdate(m.UserID, append(u.Teams, m.TeamID), len(u.Teams)))
		}
		err = st.transact(ctx, what, items)
		i, ok := failedAt(err)
		switch {
		case ok && i == 0:
			return fmt.Errorf("%s: %w", what, keys.ErrExists)
		case ok && attempt < 5:
			continue // the team or the user changed meanwhile
		case ok:
			return fmt.Errorf("%s: %w: changed concurrently", what, keys.ErrUnavailable)
		}
		return err
	}
}

// UpdateMember implements keys.Admin.
func (st *Store) UpdateMember(ctx context.Context, m keys.Member) (keys.Member, error) {
	if err := m.Validate(); err != nil {
		return keys.Member{}, err
	}
	what := "member " + keys.MemberID(m.TeamID, m.UserID)
	if _, err := st.GetMember(ctx, m.TeamID, m.UserID); err != nil {
		return keys.Member{}, err
	}
	t, err := st.GetTeam(ctx, m.TeamID)
	if err != nil {
		return keys.Member{}, err
	}
	members := slices.Clone(t.Members)
	for i := range members {
		if members[i].UserID == m.UserID {
			members[i].Role = m.Role
		}
	}
	err = st.transact(ctx, what, []types.TransactWriteItem{
		updateItem(st.table, m.Ref().String(), memberAttrs(m)),
		st.teamMembersUpdate(m.TeamID, members, len(t.Members)),
	})
	if _, ok := failedAt(err); ok {
		return keys.Member{}, fmt.Errorf("%s: changed concurrently or gone: %w", what, keys.ErrNotFound)
	}
	if err != nil {
		return keys.Member{}, err
	}
	return st.GetMember(ctx, m.TeamID, m.UserID)
}

// RemoveMember implements keys.Admin.
func (st *Store) RemoveMember(ctx context.Context, team, user string) error {
	what := "member " + keys.MemberID(team, user)
	t, err := st.GetTeam(ctx, team)
	if err != nil {
		return err
	}
	if _, err := st.GetMember(ctx, team, user); err != nil {
		return err
	}
	items := []types.TransactWriteItem{
		del(st.table, refPK(keys.KindMember, keys.MemberID(team, user)), "attribute_exists(pk)", nil),
		st.teamMembersUpdate(team, slices.DeleteFunc(slices.Clone(t.Members), func(m keys.TeamMember) bool { return m.UserID == user }), len(t.Members)),
	}
	if u, err := st.GetUser(ctx, user); err == nil {
		items = append(items, st.userTeamsUpdate(user, slices.DeleteFunc(u.Teams, func(x string) bool { return x == team }), -1))
	}
	err = st.transact(ctx, what, items)
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: changed concurrently or gone: %w", what, keys.ErrNotFound)
	}
	return err
}

// A team item's members: L of M {user_id, role, email (absent when
// none)}; a member item's role.
const (
	attrMembers = "members"
	attrRole    = "role"
)

// decodeMembers reads a team item's members.
func decodeMembers(item ddb.Item) []keys.TeamMember {
	var out []keys.TeamMember
	if l, ok := item[attrMembers].(*types.AttributeValueMemberL); ok {
		for _, e := range l.Value {
			if m, ok := e.(*types.AttributeValueMemberM); ok {
				out = append(out, keys.TeamMember{UserID: ddb.String(m.Value, attrUserID), Email: ddb.String(m.Value, attrEmail), Role: ddb.String(m.Value, attrRole)})
			}
		}
	}
	return out
}

// deleteTeam deletes a team, its member items and its id in its members'
// teams lists, in one transaction (a team of more than 48 members takes
// several: the team item goes last).
func (st *Store) deleteTeam(ctx context.Context, id string) error {
	what := "team " + id
	item, err := st.get(ctx, teamPK(id), what)
	if err != nil {
		return err
	}
	t := decodeTeam(id, item)
	var items []types.TransactWriteItem
	for _, m := range t.Members {
		items = append(items, del(st.table, refPK(keys.KindMember, keys.MemberID(id, m.UserID)), "", nil))
		if u, err := st.GetUser(ctx, m.UserID); err == nil {
			items = append(items, st.userTeamsUpdate(u.ID, slices.DeleteFunc(u.Teams, func(x string) bool { return x == id }), -1))
		}
		if len(items) >= 96 {
			if err := st.transact(ctx, what, items); err != nil {
				return err
			}
			items = nil
		}
	}
	items = append(items, del(st.table, teamPK(id), "attribute_exists(pk)", nil))
	err = st.transact(ctx, what, items)
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: %w", what, keys.ErrNotFound)
	}
	return err
}

func (st *Store) teamMembersUpdate(team string, members []keys.TeamMember, readLen int) types.TransactWriteItem {
	l := make([]types.AttributeValue, len(members))
	for i, m := range members {
		e := ddb.Item{attrUserID: ddb.S(m.UserID), attrRole: ddb.S(m.Role)}
		if m.Email != "" {
			e[attrEmail] = ddb.S(m.Email)
		}
		l[i] = &types.AttributeValueMemberM{Value: e}
	}
	return st.listSet(teamPK(team), attrMembers, &types.AttributeValueMemberL{Value: l}, readLen)
}

// deleteUser deletes a user, its member items and its entries in its
// teams' members, in one transaction.
func (st *Store) deleteUser(ctx context.Context, id string) error {
	u, err := st.GetUser(ctx, id)
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{del(st.table, userPK(id), "attribute_exists(pk)", nil)}
	for _, team := range u.Teams {
		items = append(items, del(st.table, refPK(keys.KindMember, keys.MemberID(team, id)), "", nil))
		if t, err := st.GetTeam(ctx, team); err == nil {
			items = append(items, st.teamMembersUpdate(team, slices.DeleteFunc(t.Members, func(m keys.TeamMember) bool { return m.UserID == id }), -1))
		}
	}
	err = st.transact(ctx, "user "+id, items)
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("user %s: changed concurrently or gone: %w", id, keys.ErrNotFound)
	}
	return err
}

func (st *Store) userTeamsUpdate(user string, teams []string, readLen int) types.TransactWriteItem {
	return st.listSet(userPK(user), attrTeams, ddb.List(teams), readLen)
}
