package ddbkeys

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// An organization's item: pk "org#<id>", kind "org", its settings
// (settings.go) and alias (S), created_by, updated_by (S), created_at and
// updated_at (N, epoch ms), members (L of M {user_id, role, email};
// written only by the membership methods, group.go) and team_ids (SS of
// the ids of its teams; absent when none: DynamoDB removes an empty set),
// changed only by ADD and DELETE in the team's own write (team.go), so
// that deleting the organization can be conditioned on it having none.

const (
	attrTeamIDs = "team_ids"
	attrOrgs    = "organizations" // of a user item: L of S
	attrOrgKey  = "org_id"        // of a membership item
)

func orgPK(id string) string { return refPK(keys.KindOrg, id) }

// orgTeams ADDs team to (or DELETEs it from: op) the team_ids of the
// existing organization org.
func orgTeams(table, org, team, op string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(table),
		Key:                       ddb.PK(orgPK(org)),
		UpdateExpression:          aws.String(op + " #t :t"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames:  map[string]string{"#t": attrTeamIDs},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberSS{Value: []string{team}}},
	}}
}

func orgAttrs(o keys.Organization) attrs {
	a := aliasedAttrs(o.Settings, o.Alias, o.UpdatedAt)
	a.opt(attrUpdatedBy, ddb.S(o.UpdatedBy), o.UpdatedBy != "")
	return a
}

func decodeOrg(id string, item ddb.Item) keys.Organization {
	var teams []string
	if ss, ok := item[attrTeamIDs].(*types.AttributeValueMemberSS); ok && len(ss.Value) > 0 {
		teams = slices.Sorted(slices.Values(ss.Value))
	}
	return keys.Organization{
		ID: id, Alias: ddb.String(item, attrAlias), Teams: teams, Members: decodeMembers(item),
		CreatedAt: getTime(item, attrCreated), UpdatedAt: getTime(item, attrUpdated),
		CreatedBy: ddb.String(item, attrCreatedBy), UpdatedBy: ddb.String(item, attrUpdatedBy),
		Settings: decodeSettings(item),
	}
}

// GetOrganization implements keys.Reader.
func (st *Store) GetOrganization(ctx context.Context, id string) (keys.Organization, error) {
	return read(ctx, st, keys.Ref{Kind: keys.KindOrg, ID: id}, keys.ValidOrgID(id) == nil, decodeOrg)
}

// createOrganization is Organizations().Create.
func (st *Store) createOrganization(ctx context.Context, o keys.Organization) error {
	if err := prepared(o, &o.CreatedAt); err != nil {
		return err
	}
	item := newItem(orgAttrs(o), orgPK(o.ID), keys.KindOrg, o.CreatedAt)
	if o.CreatedBy != "" {
		item[attrCreatedBy] = ddb.S(o.CreatedBy)
	}
	return st.create(ctx, item, "organization "+o.ID)
}

// deleteOrg deletes an organization that has no teams, with its
// memberships; the deletion is conditioned on team_ids being absent, so
// that a team created meanwhile cancels it.
func (st *Store) deleteOrg(ctx context.Context, id string) error {
	o, err := st.GetOrganization(ctx, id)
	if err != nil {
		return err
	}
	what := "organization " + id
	if len(o.Teams) > 0 {
		return fmt.Errorf("%s (teams %v): %w", what, o.Teams, keys.ErrOrgHasTeams)
	}
	last := []types.TransactWriteItem{del(st.table, orgPK(id), "attribute_exists(pk) AND attribute_not_exists(#t)", nil)}
	last[0].Delete.ExpressionAttributeNames = map[string]string{"#t": attrTeamIDs}
	err = st.deleteGroup(ctx, orgGroup, id, o.Members, last)
	if _, ok := failedAt(err); ok {
		if o, err := st.GetOrganization(ctx, id); err == nil && len(o.Teams) > 0 {
			return fmt.Errorf("%s (teams %v): %w", what, o.Teams, keys.ErrOrgHasTeams)
		}
		return fmt.Errorf("%s: changed concurrently or gone: %w", what, keys.ErrNotFound)
	}
	return err
}
