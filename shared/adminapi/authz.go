package adminapi

import (
	"context"
	"errors"
	"slices"

	"github.com/sluice-gw/sluice/shared/keys"
)

// mayWriteKey checks that c may create or change k (as it will be stored):
// a proxy admin anything; a team admin the keys of its team, for itself
// or the team's members whose role is not above its own; an internal user
// its own keys (in teams it is a member of), never above its own limits.
func (h *Handler) mayWriteKey(ctx context.Context, c *caller, k keys.Key) error {
	if err := h.mayTouchKey(ctx, c, k, true); err != nil {
		return err
	}
	return h.notAboveCaller(ctx, c, k)
}

// mayChangeKey checks that c may update or regenerate old (the key as it
// is before the change). Unlike deleting, both hand c a key that keeps
// acting with its user's role (regenerate shows the new secret), so a key
// of a user above c is refused as mayWriteKey refuses creating one.
func (h *Handler) mayChangeKey(ctx context.Context, c *caller, old keys.Key) error {
	if err := h.mayTouchKey(ctx, c, old, false); err != nil {
		return err
	}
	return h.notAboveCaller(ctx, c, old)
}

// notAboveCaller refuses a key of another user whose role is above c's:
// the admin routes and the gateway act with the role of a key's user, so a
// team admin that could give a key of its team to a proxy_admin member
// would hold a proxy admin's key. A proxy admin may write any key; a key
// of no user or of an unknown user carries no role.
func (h *Handler) notAboveCaller(ctx context.Context, c *caller, k keys.Key) error {
	if c.admin() || k.UserID == "" || k.UserID == c.userID {
		return nil
	}
	u, ok, err := found(h.keys.GetUser(ctx, k.UserID))
	if !ok {
		return err
	}
	if roleRank(u.Role) > roleRank(c.role) {
		return forbidden("user %s is a %s, above your own role (%s): only a proxy_admin may write its keys", u.ID, u.Role, roleName(c))
	}
	return nil
}

// roleRank orders user roles by what a key acting with them may do.
// proxy_admin_viewer is above internal_user: it reads every key, user and
// team, which an internal user may not; internal_user_viewer is below
// internal_user: it may not write keys.
func roleRank(r keys.UserRole) int {
	switch r {
	case keys.RoleProxyAdmin:
		return 4
	case keys.RoleProxyAdminViewer:
		return 3
	case keys.RoleInternalUser:
		return 2
	case keys.RoleInternalUserViewer:
		return 1
	}
	return 0
}

// mayTouchKey is mayWriteKey; limits false checks ownership only (the key
// as it is before a change).
func (h *Handler) mayTouchKey(ctx context.Context, c *caller, k keys.Key, limits bool) error {
	if c.admin() {
		return nil
	}
	if c.viewer() {
		return forbidden("proxy_admin_viewer may read keys but not write them")
	}
	if c.userID == "" {
		return forbidden("a key that belongs to no user may not manage keys")
	}
	if err := h.keyInScope(ctx, c, k); err != nil {
		return err
	}
	if k.TeamID != "" {
		t, err := h.keys.GetTeam(ctx, k.TeamID)
		switch {
		case errors.Is(err, keys.ErrNotFound):
			return badParam("team_id", "no team %q", k.TeamID)
		case err != nil:
			return err
		}
		role, err := h.teamRole(ctx, c, k.TeamID)
		if err != nil {
			return err
		}
		if role == keys.MemberAdmin {
			if k.UserID != "" && k.UserID != c.userID && t.Role(k.UserID) == "" {
				return forbidden("user %s is not a member of team %s", k.UserID, k.TeamID)
			}
			return nil
		}
		if role == "" {
			return forbidden("you are not a member of team %s", k.TeamID)
		}
	}
	if !c.internal() {
		return forbidden("%s may not write keys", roleName(c))
	}
	if k.UserID != c.userID {
		return forbidden("an internal_user may manage only its own keys (user_id %s)", c.userID)
	}
	if !limits {
		return nil
	}
	return withinLimits(c.user, k)
}

func roleName(c *caller) string {
	if c.role == "" {
		return "a key without a user role"
	}
	return string(c.role)
}

// withinLimits refuses a key with more than its owner's own limits. A key
// without a max_budget is allowed: the user's budget already bounds every key
// it owns (keyauth checks it), as in LiteLLM.
func withinLimits(u *keys.User, k keys.Key) error {
	if u == nil {
		return nil
	}
	if u.MaxBudget != nil && k.MaxBudget != nil && *k.MaxBudget > *u.MaxBudget {
		return forbidden("max_budget: at most your own max_budget of %v", *u.MaxBudget)
	}
	if u.RPMLimit > 0 && (k.RPMLimit == 0 || k.RPMLimit > u.RPMLimit) {
		return forbidden("rpm_limit: at most your own rpm_limit of %d", u.RPMLimit)
	}
	if u.TPMLimit > 0 && (k.TPMLimit == 0 || k.TPMLimit > u.TPMLimit) {
		return forbidden("tpm_limit: at most your own tpm_limit of %d", u.TPMLimit)
	}
	if u.MaxParallel != nil && (k.MaxParallel == nil || *k.MaxParallel > *u.MaxParallel) {
		return forbidden("max_parallel_requests: at most your own max_parallel_requests of %d", *u.MaxParallel)
	}
	if len(u.Models) > 0 && !slices.Contains(u.Models, "*") && !slices.Contains(u.Models, "all-proxy-models") {
		if len(k.Models) == 0 {
			return forbidden("models: at most your own models %v", u.Models)
		}
		for _, m := range k.Models {
			if !slices.Contains(u.Models, m) {
				return forbidden("models: %q is not among your own models %v", m, u.Models)
			}
		}
	}
	return nil
}

// mayReadKey checks that c may read k.
func (h *Handler) mayReadKey(ctx context.Context, c *caller, k keys.Key) error {
	switch {
	case c.viewer():
		return nil
	case c.key != nil && c.key.Hash == k.Hash:
		return nil
	}
	if err := h.keyInScope(ctx, c, k); err != nil {
		return err
	}
	switch {
	case c.userID != "" && k.UserID == c.userID:
		return nil
	}
	if role, err := h.teamRole(ctx, c, k.TeamID); err != nil || role == keys.MemberAdmin {
		return err
	}
	return forbidden("you may not read this key")
}

// mayBlockKey checks that c may block or unblock k: a proxy admin, or an
// admin of k's team.
func (h *Handler) mayBlockKey(ctx context.Context, c *caller, k keys.Key) error {
	if c.admin() {
		return nil
	}
	role, err := h.teamRole(ctx, c, k.TeamID)
	if err != nil || role == keys.MemberAdmin {
		return err
	}
	if c.viewer() {
		return forbidden("proxy_admin_viewer may read but not write")
	}
	return forbidden("blocking or unblocking a key needs a proxy_admin or an admin of the key's team")
}

// mayChangeBlocked checks a change from old to k made through /key/update
// or /key/regenerate: changing blocked needs what /key/block needs (else
// the owner of a key an admin blocked could unblock it), and so does
// moving a blocked key to another team (whose admin could then unblock it).
func (h *Handler) mayChangeBlocked(ctx context.Context, c *caller, old, k keys.Key) error {
	if k.Blocked == old.Blocked && (!old.Blocked || k.TeamID == old.TeamID) {
		return nil
	}
	return h.mayBlockKey(ctx, c, old)
}
