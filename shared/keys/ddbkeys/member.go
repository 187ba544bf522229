package ddbkeys

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// A membership's item (of a team or an organization, group.go): pk
// "member#<team>#<user>" (kind "member") or "orgmember#<org>#<user>"
// (kind "orgmember"), its settings (settings.go: only the budget is used)
// and team_id or org_id, user_id, role (S), email (S, absent when none),
// added_by (S, absent when unknown), created_at (N, epoch ms: when it was
// added) and, for an organization's, updated_at.
//
// Membership is written in three places (the member item, the group's
// members, the user's teams or organizations), always in one
// TransactWriteItems (group.go); deleting a group or a user removes its
// memberships from all three in the same transaction.

// memberAttrs encodes the settings of m (created_at aside).
func memberAttrs(g group, m keys.Member) attrs {
	a := settingsAttrs(m.Settings)
	a.set[g.idAttr] = ddb.S(m.GroupID)
	a.set[attrUserID] = ddb.S(m.UserID)
	a.set[attrRole] = ddb.S(m.Role)
	a.opt(attrEmail, ddb.S(m.Email), m.Email != "")
	a.opt(attrAddedBy, ddb.S(m.AddedBy), m.AddedBy != "")
	if g.updated {
		a.time(attrUpdated, m.UpdatedAt)
	}
	return a
}

func (g group) decodeMember(_ string, item ddb.Item) keys.Member {
	return keys.Member{
		Group: g.kind, GroupID: ddb.String(item, g.idAttr), UserID: ddb.String(item, attrUserID), Role: ddb.String(item, attrRole),
		Email: ddb.String(item, attrEmail), CreatedAt: getTime(item, attrCreated), UpdatedAt: getTime(item, attrUpdated),
		AddedBy: ddb.String(item, attrAddedBy), Settings: decodeSettings(item),
	}
}

// GetMember implements keys.Reader.
func (st *Store) GetMember(ctx context.Context, kind keys.Kind, id, user string) (keys.Member, error) {
	g, ok := groups[kind]
	return read(ctx, st, keys.MemberRef(kind, id, user), ok && keys.ValidMembership(kind, id, user) == nil, g.decodeMember)
}

// AddMember implements keys.Admin: the member item, the group's members
// (conditioned on the list read) and the user's list of its groups (or a
// new user) in one transaction.
func (st *Store) AddMember(ctx context.Context, m keys.Member) error {
	if err := prepared(m, &m.CreatedAt); err != nil {
		return err
	}
	g := groups[m.Group]
	item := newItem(memberAttrs(g, m), m.Ref().String(), g.memberKind, m.CreatedAt)
	return st.join(ctx, g, m.GroupID, keys.TeamMember{UserID: m.UserID, Email: m.Email, Role: m.Role}, item)
}

// UpdateMember implements keys.Admin.
func (st *Store) UpdateMember(ctx context.Context, m keys.Member) (keys.Member, error) {
	if err := m.Validate(); err != nil {
		return keys.Member{}, err
	}
	if err := st.setRole(ctx, groups[m.Group], m.GroupID, m.UserID, m.Role, memberAttrs(groups[m.Group], m)); err != nil {
		return keys.Member{}, err
	}
	return st.GetMember(ctx, m.Group, m.GroupID, m.UserID)
}

// RemoveMember implements keys.Admin.
func (st *Store) RemoveMember(ctx context.Context, kind keys.Kind, id, user string) error {
	g, ok := groups[kind]
	if !ok {
		return keys.NoMember(kind, id, user)
	}
	return st.leave(ctx, g, id, user)
}

// A team item's members: L of M {user_id, role, email (absent when
// none)}; a member item's role.
const (
	attrMembers = "members"
	attrRole    = "role"
	attrAddedBy = "added_by" // who added a member (team or organization)
)

// decodeMembers reads a team's or an organization's members.
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

// deleteTeam deletes a team, its member items, its id in its members'
// teams lists and in its organization's teams, in one transaction (a team
// of more than 48 members takes several: the team item goes last).
func (st *Store) deleteTeam(ctx context.Context, id string) error {
	what := "team " + id
	item, err := st.get(ctx, teamPK(id), what)
	if err != nil {
		return err
	}
	t := decodeTeam(id, item)
	last := []types.TransactWriteItem{orgCond(del(st.table, teamPK(id), "attribute_exists(pk)", nil), t.OrganizationID)}
	if t.OrganizationID != "" {
		last = append(last, orgTeams(st.table, t.OrganizationID, id, "DELETE"))
	}
	err = st.deleteGroup(ctx, teamGroup, id, t.Members, last)
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("%s: changed concurrently or gone: %w", what, keys.ErrNotFound)
	}
	return err
}

// deleteUser deletes a user, its member items and its entries in its
// teams' and organizations' members, in one transaction.
func (st *Store) deleteUser(ctx context.Context, id string) error {
	u, err := st.GetUser(ctx, id)
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{del(st.table, userPK(id), "attribute_exists(pk)", nil)}
	for _, g := range []group{teamGroup, orgGroup} {
		for _, gid := range g.userList(u) {
			items = append(items, del(st.table, g.memberPK(gid, id), "", nil))
			if members, err := st.groupMembers(ctx, g, gid); err == nil {
				items = append(items, st.membersUpdate(refPK(g.kind, gid), without(members, id), -1))
			}
		}
	}
	err = st.transact(ctx, "user "+id, items)
	if _, ok := failedAt(err); ok {
		return fmt.Errorf("user %s: changed concurrently or gone: %w", id, keys.ErrNotFound)
	}
	return err
}
