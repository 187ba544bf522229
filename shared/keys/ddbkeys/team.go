package ddbkeys

import (
	"context"
	"time"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// A team's item: pk "team#<id>", kind "team", its settings (settings.go)
// and alias (S), created_at and updated_at (N, epoch ms), members (L of M
// {user_id, role}; written only by the membership methods, member.go).
func teamPK(id string) string { return refPK(keys.KindTeam, id) }

// teamAttrs encodes the settings of t (created_at and members aside).
func teamAttrs(t keys.Team) attrs { return aliasedAttrs(t.Settings, t.Alias, t.UpdatedAt) }

func decodeTeam(id string, item ddb.Item) keys.Team {
	return keys.Team{
		ID: id, Alias: ddb.String(item, attrAlias), CreatedAt: getTime(item, attrCreated), UpdatedAt: getTime(item, attrUpdated),
		Settings: decodeSettings(item), Members: decodeMembers(item),
	}
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
