package adminapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// patch is what a request body changes on a record of type T, parsed and
// validated once, before the record is read: one setter per field the
// body gives, for the record's Settings and for its own fields. Applied
// onto the record as stored, it changes nothing else.
type patch[T any] struct {
	settings []func(*keys.Settings)
	fields   []func(*T)
	email    string // user_email, which also finds a user to update
	duration string // a key's duration, as given ("" when not)
}

func (pt *patch[T]) apply(v *T, s *keys.Settings) {
	for _, set := range pt.settings {
		set(s)
	}
	for _, set := range pt.fields {
		set(v)
	}
}

func (pt *patch[T]) setting(given bool, set func(*keys.Settings)) {
	if given {
		pt.settings = append(pt.settings, set)
	}
}

func (pt *patch[T]) field(given bool, set func(*T)) {
	if given {
		pt.fields = append(pt.fields, set)
	}
}

// str reads a string field onto the record: null or "" clears it.
func (pt *patch[T]) str(p *params, name string, f func(*T) *string) {
	v, ok := p.str(name)
	pt.field(ok || p.has(name), func(r *T) { *f(r) = v })
}

func (pt *patch[T]) models(p *params) {
	v, ok := p.strs("models")
	pt.setting(ok || p.has("models"), func(s *keys.Settings) { s.Models = v })
}

// budget reads max_budget, soft_budget and budget_duration (null clears each).
func (pt *patch[T]) budget(p *params) {
	maxUSD, ok := p.money("max_budget")
	pt.setting(ok, func(s *keys.Settings) { s.MaxBudget = maxUSD })
	soft, ok := p.money("soft_budget")
	pt.setting(ok, func(s *keys.Settings) { s.SoftBudget = soft })
	d, ok := p.period("budget_duration")
	pt.setting(ok, func(s *keys.Settings) { s.Duration = d })
}

// limits reads rpm_limit and tpm_limit.
func (pt *patch[T]) limits(p *params) {
	rpm, ok := p.limit("rpm_limit")
	pt.setting(ok || p.has("rpm_limit"), func(s *keys.Settings) { s.RPMLimit = rpm })
	tpm, ok := p.limit("tpm_limit")
	pt.setting(ok || p.has("tpm_limit"), func(s *keys.Settings) { s.TPMLimit = tpm })
}

func (pt *patch[T]) blocked(p *params) {
	v, ok := p.boolean("blocked")
	pt.setting(ok || p.has("blocked"), func(s *keys.Settings) { s.Blocked = v })
}

func (pt *patch[T]) metadata(p *params) {
	v, ok := p.object("metadata")
	pt.setting(ok, func(s *keys.Settings) { s.Metadata = v })
}

// keyPatch reads the settings of a key; now is when a duration starts.
func keyPatch(p *params, now time.Time) patch[keys.Key] {
	var pt patch[keys.Key]
	pt.str(p, "key_alias", func(k *keys.Key) *string { return &k.Alias })
	if d, s, ok := p.duration("duration"); ok {
		pt.duration = s
		pt.field(true, func(k *keys.Key) {
			k.ExpiresAt = time.Time{}
			if d > 0 {
				k.ExpiresAt = now.Add(d)
			}
		})
	}
	pt.models(p)
	pt.budget(p)
	pt.str(p, "user_id", func(k *keys.Key) *string { return &k.UserID })
	pt.str(p, "team_id", func(k *keys.Key) *string { return &k.TeamID })
	pt.limits(p)
	pt.metadata(p)
	tags, ok := p.strs("tags")
	pt.field(ok || p.has("tags"), func(k *keys.Key) { k.Tags = tags })
	pt.blocked(p)
	p.refuse(whyAliases, "aliases")
	p.refuse(whyRotation, "auto_rotate", "rotation_interval")
	p.refuseCommon()
	p.ignore("key_type", "send_invite_email", "soft_budget_cooldown")
	return pt
}

// teamPatch reads the settings of a team.
func teamPatch(p *params) patch[keys.Team] {
	var pt patch[keys.Team]
	pt.str(p, "team_alias", func(t *keys.Team) *string { return &t.Alias })
	pt.models(p)
	pt.budget(p)
	pt.limits(p)
	pt.blocked(p)
	pt.metadata(p)
	p.refuse(whyTags, "tags")
	p.refuse(whyAliases, "model_aliases")
	p.refuse(whyMemberLimit, "team_member_budget", "team_member_rpm_limit", "team_member_tpm_limit",
		"team_member_key_duration", "team_member_permissions", "default_team_member_models")
	p.refuse(whyRotation, "secret_manager_settings")
	p.refuseCommon()
	return pt
}

// userPatch reads the settings of a user.
func userPatch(p *params) patch[keys.User] {
	var pt patch[keys.User]
	email, ok := p.str("user_email")
	pt.email = email
	pt.field(ok || p.has("user_email"), func(u *keys.User) { u.Email = email })
	pt.str(p, "user_alias", func(u *keys.User) *string { return &u.Alias })
	if v, ok := p.str("user_role"); ok {
		if !keys.UserRole(v).Valid() {
			p.fail(badParam("user_role", "want proxy_admin, proxy_admin_viewer, internal_user or internal_user_viewer, got %q", v))
		}
		pt.field(true, func(u *keys.User) { u.Role = keys.UserRole(v) })
	}
	pt.models(p)
	pt.budget(p)
	pt.limits(p)
	pt.metadata(p)
	p.refuse(whyAliases, "aliases")
	p.refuse(whyOrg, "organizations")
	p.refuse("blocking a user is not built; block its keys", "blocked")
	p.refuseCommon()
	p.ignore("send_invite_email", "sso_user_id", "key_alias", "duration", "tags")
	return pt
}

// endUserPatch reads the settings of an end user.
func endUserPatch(p *params) patch[keys.EndUser] {
	var pt patch[keys.EndUser]
	pt.str(p, "alias", func(e *keys.EndUser) *string { return &e.Alias })
	pt.blocked(p)
	pt.budget(p)
	pt.limits(p)
	p.refuse(whyRegion, "allowed_model_region", "default_model")
	p.refuse(whyBudgetID, "budget_id")
	p.refuse(whyParallel, "max_parallel_requests")
	p.refuse(whyModelLimit, "model_max_budget")
	p.refuse(whySpend, "spend")
	p.refuse(whyPermissions, "object_permission")
	return pt
}

// record is how the shared flows below handle one kind of record.
type record[T any] struct {
	noun     string // "team", "user", "end user" in messages
	idParam  string // the body field that names it
	parse    func(p *params) patch[T]
	settings func(*T) *keys.Settings
	stamp    func(v *T, now time.Time) // sets UpdatedAt
	get      func(h *Handler, ctx context.Context, id string) (T, error)
	update   func(h *Handler, ctx context.Context, v T) (T, error)
}

// load reads the record id, a 404 naming param when it does not exist.
func (rk record[T]) load(h *Handler, ctx context.Context, param, id string) (T, error) {
	var zero T
	if id == "" {
		return zero, badParam(param, "required")
	}
	v, err := rk.get(h, ctx, id)
	if errors.Is(err, keys.ErrNotFound) {
		return zero, notFound(param, "%s: no %s %q", param, rk.noun, id)
	}
	return v, err
}

// decode reads a proxy admin's write of a record: its id (idParam), its
// settings patch and what more reads of the route's own fields, all from
// one parse of the body.
func (rk record[T]) decode(r *http.Request, c *caller, more func(p *params)) (string, patch[T], error) {
	if err := needAdmin(c); err != nil {
		return "", patch[T]{}, err
	}
	p, err := readParams(r)
	if err != nil {
		return "", patch[T]{}, err
	}
	id, _ := p.str(rk.idParam)
	pt := rk.parse(p)
	if more != nil {
		more(p)
	}
	return id, pt, p.done()
}

// updated is the update flow: decode, find (resolve: the id, from what
// the body gives), load, apply the patch, stamp, store.
func (rk record[T]) updated(h *Handler, r *http.Request, c *caller, resolve func(id string, pt patch[T]) (string, error)) (T, error) {
	var zero T
	id, pt, err := rk.decode(r, c, nil)
	if err != nil {
		return zero, err
	}
	if resolve != nil {
		if id, err = resolve(id, pt); err != nil {
			return zero, err
		}
	}
	v, err := rk.load(h, r.Context(), rk.idParam, id)
	if err != nil {
		return zero, err
	}
	pt.apply(&v, rk.settings(&v))
	rk.stamp(&v, h.now())
	return rk.update(h, r.Context(), v)
}

var (
	teams = record[keys.Team]{
		noun: "team", idParam: "team_id", parse: teamPatch,
		settings: func(t *keys.Team) *keys.Settings { return &t.Settings },
		stamp:    func(t *keys.Team, now time.Time) { t.UpdatedAt = now },
		get:      func(h *Handler, ctx context.Context, id string) (keys.Team, error) { return h.keys.GetTeam(ctx, id) },
		update: func(h *Handler, ctx context.Context, t keys.Team) (keys.Team, error) {
			return h.keys.UpdateTeam(ctx, t)
		},
	}
	users = record[keys.User]{
		noun: "user", idParam: "user_id", parse: userPatch,
		settings: func(u *keys.User) *keys.Settings { return &u.Settings },
		stamp:    func(u *keys.User, now time.Time) { u.UpdatedAt = now },
		get:      func(h *Handler, ctx context.Context, id string) (keys.User, error) { return h.keys.GetUser(ctx, id) },
		update: func(h *Handler, ctx context.Context, u keys.User) (keys.User, error) {
			return h.keys.UpdateUser(ctx, u)
		},
	}
	endUsers = record[keys.EndUser]{
		noun: "end user", idParam: "user_id", parse: endUserPatch,
		settings: func(e *keys.EndUser) *keys.Settings { return &e.Settings },
		stamp:    func(e *keys.EndUser, now time.Time) { e.UpdatedAt = now },
		get: func(h *Handler, ctx context.Context, id string) (keys.EndUser, error) {
			return h.keys.GetEndUser(ctx, id)
		},
		update: func(h *Handler, ctx context.Context, e keys.EndUser) (keys.EndUser, error) {
			return h.keys.UpdateEndUser(ctx, e)
		},
	}
)

// ids reads a proxy admin's list of record ids (param) and checks each
// with check (that it exists).
func (h *Handler) ids(r *http.Request, c *caller, param string, check func(ctx context.Context, id string) error) ([]string, error) {
	if err := needAdmin(c); err != nil {
		return nil, err
	}
	p, err := readParams(r)
	if err != nil {
		return nil, err
	}
	ids, _ := p.strs(param)
	if err := p.done(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, badParam(param, "required")
	}
	for _, id := range ids {
		if err := check(r.Context(), id); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// deleteOwned deletes records of kind and their keys (kept as deleted-key
// audit copies, naming c), as /team/delete and /user/delete do; it returns
// how many keys it deleted.
func (h *Handler) deleteOwned(ctx context.Context, c *caller, kind keys.Kind, ids []string) (int, error) {
	deleted := 0
	for _, id := range ids {
		f := keys.KeyFilter{TeamID: id}
		if kind == keys.KindUser {
			f = keys.KeyFilter{UserID: id}
		}
		ks, err := h.keys.ListKeys(ctx, f)
		if err != nil {
			return deleted, err
		}
		for _, k := range ks {
			if _, err := h.keys.ArchiveKey(ctx, k.Hash, c.name()); err != nil && !errors.Is(err, keys.ErrNotFound) {
				return deleted, err
			}
			deleted++
		}
		if err := h.keys.Delete(ctx, keys.Ref{Kind: kind, ID: id}); err != nil && !errors.Is(err, keys.ErrNotFound) {
			return deleted, err
		}
	}
	return deleted, nil
}
