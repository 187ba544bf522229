package ddbkeys

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// A team's item: pk "team#<id>", kind "team", its settings (settings.go)
// and alias (S), created_at and updated_at (N, epoch ms), members (L of M
// {user_id, role}; written only by the membership methods, member.go).
const (
	attrMembers = "members"
	attrRole    = "role"
)

func teamPK(id string) string { return refPK(keys.KindTeam, id) }

// teamAttrs encodes the settings of t (created_at and members aside).
func teamAttrs(t keys.Team) attrs {
	a := settingsAttrs(t.Settings)
	a.set[attrAlias] = ddb.S(t.Alias)
	a.time(attrUpdated, t.UpdatedAt)
	return a
}

func decodeTeam(id string, item ddb.Item) keys.Team {
	t := keys.Team{
		ID: id, Alias: ddb.String(item, attrAlias), CreatedAt: getTime(item, attrCreated), UpdatedAt: getTime(item, attrUpdated),
		Settings: decodeSettings(item),
	}
	if l, ok := item[attrMembers].(*types.AttributeValueMemberL); ok {
		for _, e := range l.Value {
			if m, ok := e.(*types.AttributeValueMemberM); ok {
				t.Members = append(t.Members, keys.TeamMember{UserID: ddb.String(m.Value, attrUserID), Role: ddb.String(m.Value, attrRole)})
			}
		}
	}
	return t
}

// GetTeam implements keys.Reader.
func (st *Store) GetTeam(ctx context.Context, id string) (keys.Team, error) {
	return read(ctx, st, keys.Ref{Kind: keys.KindTeam, ID: id}, keys.ValidTeamID(id) == nil, decodeTeam)
}

// CreateTeam implements keys.Admin.
func (st *Store) CreateTeam(ctx context.Context, t keys.Team) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now()
	}
	return st.create(ctx, newItem(teamAttrs(t), teamPK(t.ID), keys.KindTeam, t.CreatedAt), "team "+t.ID)
}

// UpdateTeam implements keys.Admin.
func (st *Store) UpdateTeam(ctx context.Context, t keys.Team) (keys.Team, error) {
	return write(ctx, st, t, keys.Ref{Kind: keys.KindTeam, ID: t.ID}, teamAttrs(t), decodeTeam)
}

// ListTeams implements keys.Admin.
func (st *Store) ListTeams(ctx context.Context) ([]keys.Team, error) {
	return list(ctx, st, keys.KindTeam, decodeTeam)
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
		l[i] = &types.AttributeValueMemberM{Value: ddb.Item{attrUserID: ddb.S(m.UserID), attrRole: ddb.S(m.Role)}}
	}
	return st.listSet(teamPK(team), attrMembers, &types.AttributeValueMemberL{Value: l}, readLen)
}
