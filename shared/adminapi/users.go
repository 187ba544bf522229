package adminapi

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

func (h *Handler) userNew(w http.ResponseWriter, r *http.Request, c *caller) error {
	var joins []teamJoin
	var autoKey, hasAuto bool
	var alias, durationText, teamID string
	var spend *float64
	id, pt, err := users.decode(r, c, func(p *params) {
		joins = p.teamJoins("teams")
		teamID, _ = p.str("team_id")
		spend, _ = p.money("spend")
		autoKey, hasAuto = p.boolean("auto_create_key")
		alias, _ = p.str("key_alias")
		_, durationText, _ = p.duration("duration")
	})
	if err != nil {
		return err
	}
	now := h.now()
	u := keys.User{ID: id, Role: keys.RoleInternalUser, CreatedAt: now, UpdatedAt: now}
	pt.apply(&u, &u.Settings)
	if !hasAuto {
		autoKey = true
	}
	ctx := r.Context()
	for _, j := range joins {
		if _, err := h.loadTeam(ctx, j.TeamID); err != nil {
			if e := apierr.From(err); e.Param == "team_id" {
				e.Param = "teams"
			}
			return err
		}
	}
	if teamID != "" {
		if _, err := h.loadTeam(ctx, teamID); err != nil {
			return err
		}
		joins = append(joins, teamJoin{TeamID: teamID, Role: keys.MemberUser}) // LiteLLM's team_id: joins as a user
	}
	if u.ID == "" {
		u.ID = newID()
	}
	stored, err := users.created(h, ctx, u.ID, u, func() error {
		for _, j := range joins {
			mb := keys.Member{Group: keys.KindTeam, GroupID: j.TeamID, UserID: u.ID, Role: j.Role, Email: u.Email, CreatedAt: now, AddedBy: c.name(), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: j.Budget}}}
			if err := h.keys.AddMember(ctx, mb); err != nil && !errors.Is(err, keys.ErrExists) {
				return err
			}
			h.added(ctx, c, "team", j.TeamID, u.ID, j.Role)
		}
		return h.setUserSpend(ctx, u.ID, spend)
	})
	if err != nil {
		return err
	}
	o := userObject(stored, now)
	o["key"], o["token"], o["key_name"], o["expires"] = nil, nil, nil, nil
	if autoKey {
		secret, err := newSecret()
		if err != nil {
			return err
		}
		k := keys.Key{Hash: keys.HashSecret(secret), KeyName: keyName(secret), UserID: u.ID, Alias: alias,
			CreatedAt: now, CreatedBy: c.name(), UpdatedAt: now, UpdatedBy: c.name()}
		if durationText != "" {
			d, _ := parseDuration(durationText)
			k.ExpiresAt = now.Add(d)
		}
		if err := h.keys.CreateKey(ctx, k); err != nil {
			return keyStoreError(err)
		}
		o["key"], o["token"], o["key_name"], o["expires"] = secret, k.Hash, k.KeyName, ts(k.ExpiresAt)
	}
	return ok(w, o)
}

func (h *Handler) loadUser(r *http.Request, id string) (keys.User, error) {
	return users.load(h, r.Context(), "user_id", id)
}

// userDelete deletes users, their keys (kept as deleted-key audit copies)
// and their memberships.
func (h *Handler) userDelete(w http.ResponseWriter, r *http.Request, c *caller) error {
	ids, err := h.ids(r, c, "user_ids", func(ctx context.Context, id string) error {
		_, err := h.keys.GetUser(ctx, id)
		if errors.Is(err, keys.ErrNotFound) {
			return notFound("user_ids", "user_ids: no user %q", id)
		}
		return err
	})
	if err != nil {
		return err
	}
	if _, err := h.deleteOwned(r.Context(), c, keys.KindUser, ids); err != nil {
		return err
	}
	return ok(w, obj{"deleted_users": ids})
}

func (h *Handler) userInfo(w http.ResponseWriter, r *http.Request, c *caller) error {
	q := &query{r: r}
	id := q.str("user_id")
	if id == "" {
		if c.userID == "" {
			return badParam("user_id", "required (the caller is no user)")
		}
		id = c.userID
	}
	if !c.viewer() && id != c.userID {
		return forbidden("you may read only your own user")
	}
	u, err := h.loadUser(r, id)
	if err != nil {
		return err
	}
	ctx := r.Context()
	now := h.now()
	ks, err := h.keys.ListKeys(ctx, keys.KeyFilter{UserID: id})
	if err == nil {
		ks, err = h.inScopeKeys(ctx, c, ks)
	}
	if err != nil {
		return err
	}
	keyObjs, teamObjs := []obj{}, []obj{}
	for _, k := range ks {
		keyObjs = append(keyObjs, keyObject(k, now))
	}
	var inTeams []string
	for _, t := range u.Teams {
		if tm, err := h.keys.GetTeam(ctx, t); err == nil && c.holdsTeam(tm) {
			teamObjs = append(teamObjs, teamObject(tm, now))
			inTeams = append(inTeams, t)
		}
	}
	u.Teams = inTeams
	u.Organizations = slices.DeleteFunc(u.Organizations, func(o string) bool { return !c.holdsOrg(o) })
	info := userObject(u, now)
	if info["memberships"], err = h.memberships(ctx, u); err != nil {
		return err
	}
	return ok(w, obj{"user_id": id, "user_info": info, "keys": keyObjs, "teams": teamObjs})
}

func (h *Handler) userList(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.viewer() {
		return forbidden("listing users needs a proxy_admin or proxy_admin_viewer")
	}
	q := &query{r: r}
	page := q.int("page", 1, 1, 1_000_000)
	size := q.int("page_size", 25, 1, 100)
	role := q.str("role")
	ids := q.list("user_ids")
	if q.err != nil {
		return q.err
	}
	us, err := h.keys.Users().List(r.Context())
	if err != nil {
		return err
	}
	now := h.now()
	var all []obj
	for _, u := range us {
		if (role == "" || string(u.Role) == role) && (len(ids) == 0 || slices.Contains(ids, u.ID)) {
			all = append(all, userObject(u, now))
		}
	}
	total := len(all)
	lo, hi := min((page-1)*size, total), min(page*size, total)
	return ok(w, obj{"users": append([]obj{}, all[lo:hi]...), "total": total, "page": page, "page_size": size,
		"total_pages": (total + size - 1) / size})
}

// setUserSpend sets the user's spend when the body gave one (LiteLLM's
// spend field, which scripts send as 0 to reset a user's spend).
func (h *Handler) setUserSpend(ctx context.Context, id string, spend *float64) error {
	if spend == nil {
		return nil
	}
	return h.keys.SetSpend(ctx, keys.Ref{Kind: keys.KindUser, ID: id}, keys.Nanos(*spend), h.now())
}

// userUpdate is /user/update: the user named by user_id (or found by
// user_email) gets the body's settings and, when the body has spend, that
// spend.
func (h *Handler) userUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	var spend *float64
	id, pt, err := users.decode(r, c, func(p *params) { spend, _ = p.money("spend") })
	if err != nil {
		return err
	}
	ctx := r.Context()
	if id == "" && pt.email != "" {
		if id, err = h.userByEmail(ctx, pt.email); err != nil {
			return err
		}
	}
	u, err := users.load(h, ctx, "user_id", id)
	if err != nil {
		return err
	}
	pt.apply(&u, &u.Settings)
	u.UpdatedAt = h.now()
	if u, err = h.keys.Users().Update(ctx, u); err != nil {
		return err
	}
	if spend != nil {
		if err := h.setUserSpend(ctx, u.ID, spend); err != nil {
			return err
		}
		if u, err = h.keys.GetUser(ctx, u.ID); err != nil {
			return err
		}
	}
	return ok(w, obj{"user_id": u.ID, "data": userObject(u, h.now())})
}
