package adminapi

import (
	"github.com/sluice-gw/sluice/shared/keys"
)

// notOwnMembership refuses a team admin's change of its own membership of
// team (its role or its max_budget_in_team): a team admin manages the
// team's members, but a limit it could raise on itself would bound
// nothing (and leaving the team would drop its member budget from its
// team keys). Only a proxy admin may change a team admin's own membership.
// LiteLLM's member_update checks only that the caller is a team or proxy
// admin; this is stricter on purpose (docs/admin-api.md, Roles).
func notOwnMembership(c *caller, team, user string) error {
	if c.admin() || c.userID == "" || user != c.userID {
		return nil
	}
	return forbidden("you may not change or leave your own membership of team %s (role, max_budget_in_team): only a proxy_admin may", team)
}

// ownKeyUser gives a key written by a caller other than a proxy admin a
// user: the caller's own when it names none. A key of no user is bounded
// by no user budget, so a team admin whose user budget is spent could
// otherwise keep spending through a user-less team key it mints. LiteLLM
// does the same for a non-admin's /key/generate without user_id
// (apply_key_generation_ownership_defaults); here null and "" count as
// absent too.
func ownKeyUser(c *caller, k *keys.Key) {
	if !c.admin() && k.UserID == "" && c.userID != "" {
		k.UserID = c.userID
	}
}

// notUserless refuses a change by a caller other than a proxy admin that
// would leave a key of a user with none (/key/update, /key/regenerate with
// user_id null or ""), for the reason ownKeyUser gives.
func notUserless(c *caller, old, k keys.Key) error {
	if c.admin() || k.UserID != "" || old.UserID == "" {
		return nil
	}
	e := forbidden("user_id: only a proxy_admin may make a key belong to no user (its user's budget would no longer bound it)")
	e.Param = "user_id"
	return e
}
