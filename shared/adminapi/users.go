package adminapi

import (
	"errors"
	"net/http"
	"slices"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// applyUserSettings sets on u the user settings present in p.
func applyUserSettings(p *params, u *keys.User) {
	if v, ok := p.str("user_email"); ok || p.has("user_email") {
		u.Email = v
	}
	if v, ok := p.str("user_alias"); ok || p.has("user_alias") {
		u.Alias = v
	}
	if v, ok := p.str("user_role"); ok {
		if !keys.UserRole(v).Valid() {
			p.fail(badParam("user_role", "want proxy_admin, proxy_admin_viewer, internal_user or internal_user_viewer, got %q", v))
		}
		u.Role = keys.UserRole(v)
	}
	if v, ok := p.strs("models"); ok || p.has("models") {
		u.Models = v
	}
	if v, ok := p.money("max_budget"); ok {
		u.MaxBudget = v
	}
	if v, ok := p.money("soft_budget"); ok {
		u.SoftBudget = v
	}
	if v, ok := p.period("budget_duration"); ok {
		u.Duration = v
	}
	if v, ok := p.limit("rpm_limit"); ok || p.has("rpm_limit") {
		u.RPMLimit = v
	}
	if v, ok := p.limit("tpm_limit"); ok || p.has("tpm_limit") {
		u.TPMLimit = v
	}
	if v, ok := p.object("metadata"); ok {
		u.Metadata = v
	}
	p.refuse(whyAliases, "aliases")
	p.refuse(whyOrg, "organizations")
	p.refuse("blocking a user is not built; block its keys", "blocked")
	p.refuseCommon()
	p.ignore("send_invite_email", "sso_user_id", "key_alias", "duration", "tags")
}

func userStoreError(err error, id string) error {
	if errors.Is(err, keys.ErrExists) {
		e := apierr.New(apierr.Conflict, "user_id: user %q exists already", id)
		e.Param = "user_id"
		return e
	}
	return err
}

func (h *Handler) userNew(w http.ResponseWriter, r *http.Request, c *caller) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	p, err := readParams(r)
	if err != nil {
		return err
	}
	now := h.now()
	u := keys.User{Role: keys.RoleInternalUser, CreatedAt: now, UpdatedAt: now}
	u.ID, _ = p.str("user_id")
	applyUserSettings(p, &u)
	teams, _ := p.strs("teams")
	autoKey, hasAuto := p.boolean("auto_create_key")
	alias, _ := p.str("key_alias")
	_, durationText, _ := p.duration("duration")
	if err := p.done(); err != nil {
		return err
	}
	if !hasAuto {
		autoKey = true
	}
	ctx := r.Context()
	for _, t := range teams {
		if _, err := h.loadTeam(ctx, t); err != nil {
			if e := apierr.From(err); e.Param == "team_id" {
				e.Param = "teams"
			}
			return err
		}
	}
	if u.ID == "" {
		u.ID = newID()
	}
	if err := h.keys.CreateUser(ctx, u); err != nil {
		return userStoreError(err, u.ID)
	}
	for _, t := range teams {
		if err := h.keys.AddMember(ctx, keys.Member{TeamID: t, UserID: u.ID, Role: keys.MemberUser, CreatedAt: now}); err != nil && !errors.Is(err, keys.ErrExists) {
			return err
		}
	}
	stored, err := h.keys.GetUser(ctx, u.ID)
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
	if id == "" {
		return keys.User{}, badParam("user_id", "required")
	}
	u, err := h.keys.GetUser(r.Context(), id)
	if errors.Is(err, keys.ErrNotFound) {
		return keys.User{}, notFound("user_id", "user_id: no user %q", id)
	}
	return u, err
}

func (h *Handler) userUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	p, err := readParams(r)
	if err != nil {
		return err
	}
	id, _ := p.str("user_id")
	var probe keys.User
	applyUserSettings(p, &probe)
	if err := p.done(); err != nil {
		return err
	}
	if id == "" && probe.Email != "" {
		if id, err = h.userByEmail(r.Context(), probe.Email); err != nil {
			return err
		}
	}
	u, err := h.loadUser(r, id)
	if err != nil {
		return err
	}
	p2, _ := reparse(p)
	applyUserSettings(p2, &u)
	u.UpdatedAt = h.now()
	u, err = h.keys.UpdateUser(r.Context(), u)
	if err != nil {
		return err
	}
	return ok(w, obj{"user_id": u.ID, "data": userObject(u, h.now())})
}

// userDelete deletes users, their keys (kept as deleted-key audit copies)
// and their memberships.
func (h *Handler) userDelete(w http.ResponseWriter, r *http.Request, c *caller) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	p, err := readParams(r)
	if err != nil {
		return err
	}
	ids, _ := p.strs("user_ids")
	if err := p.done(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return badParam("user_ids", "required")
	}
	ctx := r.Context()
	for _, id := range ids {
		if _, err := h.keys.GetUser(ctx, id); errors.Is(err, keys.ErrNotFound) {
			return notFound("user_ids", "user_ids: no user %q", id)
		} else if err != nil {
			return err
		}
	}
	for _, id := range ids {
		ks, err := h.keys.ListKeys(ctx, keys.KeyFilter{UserID: id})
		if err != nil {
			return err
		}
		for _, k := range ks {
			if _, err := h.keys.ArchiveKey(ctx, k.Hash, c.name()); err != nil && !errors.Is(err, keys.ErrNotFound) {
				return err
			}
		}
		if err := h.keys.Delete(ctx, keys.Ref{Kind: keys.KindUser, ID: id}); err != nil && !errors.Is(err, keys.ErrNotFound) {
			return err
		}
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
	if err != nil {
		return err
	}
	keyObjs, teamObjs := []obj{}, []obj{}
	for _, k := range ks {
		keyObjs = append(keyObjs, keyObject(k, now))
	}
	for _, t := range u.Teams {
		if tm, err := h.keys.GetTeam(ctx, t); err == nil {
			teamObjs = append(teamObjs, teamObject(tm, now))
		}
	}
	return ok(w, obj{"user_id": id, "user_info": userObject(u, now), "keys": keyObjs, "teams": teamObjs})
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
	us, err := h.keys.ListUsers(r.Context())
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
