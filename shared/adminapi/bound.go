package adminapi

import (
	"context"
	"log/slog"

	"github.com/sluice-gw/sluice/shared/keys"
)

// Keys minted for someone else (issue 29; docs/admin-api.md, Roles). A key
// that a team admin or an org_admin hands to another user (generates or
// regenerates for it, or gives it by changing its user_id) is bound to the
// minter's scope: the key's team when the minter is an admin of that team,
// the team's organization when the minter is an org_admin of it. The key
// carries its user's identity, but a caller authenticated with it (a bound
// caller) reaches nothing outside that scope: no other team or
// organization is read, managed, billed or given a key, and the user's
// own records (its /user/info, its keys, its spend) are shown only within
// the scope. A bound caller never acts as a proxy admin or viewer, and
// every key it writes is bound to its scope too. The user's rights
// elsewhere are reached only through keys the user, or a proxy admin, made.

// boundRole is the role a bound caller acts with: its user's, but never a
// proxy admin's or viewer's (the minter could not hand those out; a user
// promoted later does not promote keys others hold).
func boundRole(r keys.UserRole) keys.UserRole {
	switch r {
	case keys.RoleProxyAdmin:
		return keys.RoleInternalUser
	case keys.RoleProxyAdminViewer:
		return keys.RoleInternalUserViewer
	}
	return r
}

// holdsTeam reports whether c may reach team t at all: every team for a
// caller that is not bound.
func (c *caller) holdsTeam(t keys.Team) bool {
	return c.scope == nil || c.scope.Holds(t.ID, t.OrganizationID)
}

// holdsOrg reports whether c may reach organization org at all.
func (c *caller) holdsOrg(org string) bool {
	return c.scope == nil || (c.scope.Org != "" && c.scope.Org == org)
}

// outOfScope is the refusal of a bound caller's step outside its scope.
func outOfScope(c *caller, what string) error {
	where := "team " + c.scope.Team
	if c.scope.Team == "" {
		where = "organization " + c.scope.Org
	}
	return forbidden("this key was minted by %s for %s and is bound to %s: it may not reach %s (use a key the user or a proxy_admin made)",
		orUnknown(c.scope.By), c.userID, where, what)
}

func orUnknown(s string) string {
	if s == "" {
		return "an admin"
	}
	return s
}

// boundHolds reports whether the key scope b holds the team team ("": a
// key of no team, which no scope holds).
func (h *Handler) boundHolds(ctx context.Context, b keys.Bound, team string) (bool, error) {
	switch {
	case b.IsZero():
		return true, nil
	case team == "":
		return false, nil
	case b.Team != "":
		return b.Team == team, nil
	}
	t, ok, err := found(h.keys.GetTeam(ctx, team))
	return ok && t.OrganizationID == b.Org, err
}

// keyInScope refuses a bound caller a key outside its scope (its own key
// is always within).
func (h *Handler) keyInScope(ctx context.Context, c *caller, k keys.Key) error {
	ok, err := h.held(ctx, c, k)
	switch {
	case err != nil:
		return err
	case ok:
		return nil
	case k.TeamID == "":
		return outOfScope(c, "keys of no team")
	}
	return outOfScope(c, "the keys of team "+k.TeamID)
}

// held reports whether k is within c's reach: always for a caller that is
// not bound; for a bound one, its own key and the keys of its scope.
func (h *Handler) held(ctx context.Context, c *caller, k keys.Key) (bool, error) {
	if c.scope == nil || (c.key != nil && c.key.Hash == k.Hash) {
		return true, nil
	}
	return h.boundHolds(ctx, *c.scope, k.TeamID)
}

// inScopeKeys drops the keys outside a bound caller's scope from a list.
func (h *Handler) inScopeKeys(ctx context.Context, c *caller, ks []keys.Key) ([]keys.Key, error) {
	if c.scope == nil {
		return ks, nil
	}
	return appendKept(ks[:0], ks, func(k keys.Key) (bool, error) { return h.held(ctx, c, k) })
}

// bind sets the scope of k, a key c writes (old: the key before the
// change; nil for a new key). handsOver: the write shows k's secret to c
// (generate, regenerate). A proxy admin's write keeps k's scope; a bound
// caller's binds k to its own scope (or keeps k's, when narrower); a team
// or org admin's key for another user is bound to the minter's scope when
// the write hands the secret over or gives the key to that user. A bound
// key stays within its scope: moving it out is refused, for everyone.
func (h *Handler) bind(ctx context.Context, c *caller, old, k *keys.Key, handsOver bool) error {
	switch {
	case c.admin():
	case c.scope != nil:
		k.Bound = narrower(k.Bound, *c.scope)
	case k.UserID != c.userID && c.userID != "" && (handsOver || old == nil || old.UserID != k.UserID):
		b := keys.Bound{By: c.userID, Team: k.TeamID}
		if t, err := h.keys.GetTeam(ctx, k.TeamID); err == nil && t.OrganizationID != "" && t.Role(c.userID) != keys.MemberAdmin {
			if admin, err := h.orgAdmin(ctx, c, t.OrganizationID); err != nil {
				return err
			} else if admin {
				b = keys.Bound{By: c.userID, Org: t.OrganizationID}
			}
		}
		k.Bound = narrower(k.Bound, b)
	}
	ok, err := h.boundHolds(ctx, k.Bound, k.TeamID)
	if err != nil || ok {
		return err
	}
	e := forbidden("team_id: this key is bound to %s (minted by %s for another user) and stays there: make a new key instead", boundName(k.Bound), orUnknown(k.Bound.By))
	e.Param = "team_id"
	return e
}

// narrower is the narrower of two scopes (a team within an organization
// is narrower than the organization; zero holds everything).
func narrower(a, b keys.Bound) keys.Bound {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Team != "":
		return a
	case b.Team != "":
		return b
	}
	return a
}

func boundName(b keys.Bound) string {
	if b.Team != "" {
		return "team " + b.Team
	}
	return "organization " + b.Org
}

// boundObject is a key's scope as /key/info shows it (bound_to, a Sluice
// field): null when unbound.
func boundObject(b keys.Bound) any {
	switch {
	case b.IsZero():
		return nil
	case b.Team != "":
		return obj{"team_id": b.Team, "bound_by": orNil(b.By)}
	}
	return obj{"organization_id": b.Org, "bound_by": orNil(b.By)}
}

// scopeSpend narrows a bound caller's spend query to its scope: its team,
// or its organization (a team or organization named outside it: 403).
func scopeSpend(c *caller, team, org *string) error {
	if c.scope == nil {
		return nil
	}
	if c.scope.Team != "" {
		if (*team != "" && *team != c.scope.Team) || *org != "" {
			return outOfScope(c, "spend outside it")
		}
		*team = c.scope.Team
		return nil
	}
	if *org != "" && *org != c.scope.Org {
		return outOfScope(c, "organization "+*org)
	}
	*org = c.scope.Org
	return nil
}

// added logs the audit record of a membership written: who added whom to
// which team or organization, when (also kept on the membership as
// added_by and its created_at, shown in /user/info's memberships).
func (h *Handler) added(ctx context.Context, c *caller, kind, group, user, role string) {
	h.log.LogAttrs(ctx, slog.LevelInfo, "membership added", slog.String("kind", kind), slog.String("group", group),
		slog.String("user_id", user), slog.String("role", role), slog.String("added_by", c.name()), slog.Time("added_at", h.now()))
}

// memberships lists u's memberships of teams and organizations (u.Teams,
// u.Organizations, already narrowed to the caller's scope) with who added
// each and when: /user/info's memberships, a Sluice field (LiteLLM has no
// such list; its audit log is an enterprise feature this gateway lacks).
func (h *Handler) memberships(ctx context.Context, u keys.User) ([]obj, error) {
	out := []obj{}
	for _, g := range []struct {
		kind    keys.Kind
		idParam string
		ids     []string
	}{{keys.KindTeam, "team_id", u.Teams}, {keys.KindOrg, "organization_id", u.Organizations}} {
		ms, err := existing(ctx, g.ids, func(ctx context.Context, id string) (keys.Member, error) {
			return h.keys.GetMember(ctx, g.kind, id, u.ID)
		})
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			out = append(out, obj{g.idParam: m.GroupID, "role": m.Role, "added_by": orNil(m.AddedBy), "added_at": ts(m.CreatedAt)})
		}
	}
	return out, nil
}
