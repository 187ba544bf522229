package ddbkeys

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// A team's item: pk "team#<id>", kind "team", its settings (settings.go)
// and alias (S), organization_id (S; absent: none), created_at and
// updated_at (N, epoch ms), members (L of M {user_id, role}; written only
// by the membership methods, group.go).
//
// A team's organization_id and its id in that organization's team_ids
// (org.go) are written in one transaction, conditioned on the
// organization existing and on the team's organization_id as read.
func teamPK(id string) string { return refPK(keys.KindTeam, id) }

const attrOrgID = "organization_id"

// teamAttrs encodes the settings of t (created_at and members aside).
func teamAttrs(t keys.Team) attrs {
	a := aliasedAttrs(t.Settings, t.Alias, t.UpdatedAt)
	a.opt(attrOrgID, ddb.S(t.OrganizationID), t.OrganizationID != "")
	return a
}

func decodeTeam(id string, item ddb.Item) keys.Team {
	return keys.Team{
		ID: id, Alias: ddb.String(item, attrAlias), OrganizationID: ddb.String(item, attrOrgID),
		CreatedAt: getTime(item, attrCreated), UpdatedAt: getTime(item, attrUpdated),
		Settings: decodeSettings(item), Members: decodeMembers(item),
	}
}

// GetTeam implements keys.Reader.
func (st *Store) GetTeam(ctx context.Context, id string) (keys.Team, error) {
	return read(ctx, st, keys.Ref{Kind: keys.KindTeam, ID: id}, keys.ValidTeamID(id) == nil, decodeTeam)
}

// createTeam is Teams().Create: a team in an organization is put in
// the same transaction as its id in the organization's team_ids.
func (st *Store) createTeam(ctx context.Context, t keys.Team) error {
	if err := prepared(t, &t.CreatedAt); err != nil {
		return err
	}
	what := "team " + t.ID
	item := newItem(teamAttrs(t), teamPK(t.ID), keys.KindTeam, t.CreatedAt)
	if t.OrganizationID == "" {
		return st.create(ctx, item, what)
	}
	err := st.transact(ctx, what, []types.TransactWriteItem{
		put(st.table, item, "attribute_not_exists(pk)", nil),
		orgTeams(st.table, t.OrganizationID, t.ID, "ADD"),
	})
	switch i, ok := failedAt(err); {
	case ok && i == 0:
		return fmt.Errorf("%s: %w", what, keys.ErrExists)
	case ok:
		return keys.NoOrganization(t.OrganizationID)
	}
	return err
}

// updateTeam is Teams().Update: the update is conditioned on the
// organization_id read, and a change of organization moves the team's id
// between the organizations' team_ids in the same transaction.
func (st *Store) updateTeam(ctx context.Context, t keys.Team) (keys.Team, error) {
	if err := t.Validate(); err != nil {
		return keys.Team{}, err
	}
	what := "team " + t.ID
	for attempt := 0; ; attempt++ {
		old, err := st.GetTeam(ctx, t.ID)
		if err != nil {
			return keys.Team{}, err
		}
		u := orgCond(updateItem(st.table, teamPK(t.ID), teamAttrs(t)), old.OrganizationID)
		if old.OrganizationID == t.OrganizationID {
			item, err := st.runUpdate(ctx, u.Update, types.ReturnValueAllNew)
			switch {
			case ddb.ConditionFailed(err) && attempt < 5:
				continue // moved meanwhile (or gone: the read says)
			case err != nil:
				return keys.Team{}, wrap("update", what, err)
			}
			return decodeTeam(t.ID, item), nil
		}
		items := []types.TransactWriteItem{u}
		if t.OrganizationID != "" {
			items = append(items, orgTeams(st.table, t.OrganizationID, t.ID, "ADD"))
		}
		if old.OrganizationID != "" {
			items = append(items, orgTeams(st.table, old.OrganizationID, t.ID, "DELETE"))
		}
		err = st.transact(ctx, what, items)
		switch i, ok := failedAt(err); {
		case ok && i == 0 && attempt < 5:
			continue
		case ok && i == 1 && t.OrganizationID != "":
			return keys.Team{}, keys.NoOrganization(t.OrganizationID)
		case ok:
			return keys.Team{}, fmt.Errorf("%s: %w: changed concurrently", what, keys.ErrUnavailable)
		case err != nil:
			return keys.Team{}, err
		}
		return st.GetTeam(ctx, t.ID)
	}
}

// orgCond adds to the condition of a team item's write that its
// organization_id is still org ("": none).
func orgCond(w types.TransactWriteItem, org string) types.TransactWriteItem {
	var cond **string
	var names *map[string]string
	var values *map[string]types.AttributeValue
	if u := w.Update; u != nil {
		cond, names, values = &u.ConditionExpression, &u.ExpressionAttributeNames, &u.ExpressionAttributeValues
	} else {
		d := w.Delete
		cond, names, values = &d.ConditionExpression, &d.ExpressionAttributeNames, &d.ExpressionAttributeValues
	}
	if *names == nil {
		*names = map[string]string{}
	}
	(*names)["#org"] = attrOrgID
	expr := " AND attribute_not_exists(#org)"
	if org != "" {
		if *values == nil {
			*values = map[string]types.AttributeValue{}
		}
		(*values)[":org"] = ddb.S(org)
		expr = " AND #org = :org"
	}
	*cond = aws.String(aws.ToString(*cond) + expr)
	return w
}
