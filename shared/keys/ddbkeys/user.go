package ddbkeys

import (
	"context"
	"time"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// A user's item: pk "user#<id>", kind "user", its settings (settings.go)
// and email, alias (user_alias), user_role (S), created_at and updated_at
// (N, epoch ms), teams and organizations (L of S; written only by the
// membership methods, group.go).
const (
	attrEmail    = "email"
	attrUserRole = "user_role"
	attrTeams    = "teams"
)

func userPK(id string) string { return refPK(keys.KindUser, id) }

// userAttrs encodes the settings of u (created_at and teams aside).
func userAttrs(u keys.User) attrs {
	a := aliasedAttrs(u.Settings, u.Alias, u.UpdatedAt)
	a.set[attrEmail] = ddb.S(u.Email)
	a.set[attrUserRole] = ddb.S(string(u.Role))
	return a
}

func decodeUser(id string, item ddb.Item) keys.User {
	return keys.User{
		ID: id, Email: ddb.String(item, attrEmail), Alias: ddb.String(item, attrAlias),
		Role: keys.UserRole(ddb.String(item, attrUserRole)), Teams: ddb.Strings(item, attrTeams), Organizations: ddb.Strings(item, attrOrgs),
		CreatedAt: getTime(item, attrCreated), UpdatedAt: getTime(item, attrUpdated), Settings: decodeSettings(item),
	}
}

// newUserItem is the item of a new user (in no team).
func newUserItem(u keys.User) ddb.Item {
	if u.CreatedAt.IsZero() {
		u.CreatedAt = time.Now()
	}
	if u.Role == "" {
		u.Role = keys.RoleInternalUser
	}
	item := newItem(userAttrs(u), userPK(u.ID), keys.KindUser, u.CreatedAt)
	item[attrTeams] = ddb.List(nil)
	return item
}

// GetUser implements keys.Reader.
func (st *Store) GetUser(ctx context.Context, id string) (keys.User, error) {
	return read(ctx, st, keys.Ref{Kind: keys.KindUser, ID: id}, keys.ValidID("user_id", id) == nil, decodeUser)
}

// createUser is Users().Create.
func (st *Store) createUser(ctx context.Context, u keys.User) error {
	if err := u.Validate(); err != nil {
		return err
	}
	return st.create(ctx, newUserItem(u), "user "+u.ID)
}
