package adminapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// record is how the shared flows below handle one kind of record.
type record[T any] struct {
	noun     string // "team", "user", "end user" in messages
	idParam  string // the body field that names it
	parse    func(p *params) patch[T]
	settings func(*T) *keys.Settings
	stamp    func(v *T, now time.Time, by string) // sets UpdatedAt (and UpdatedBy, where the kind keeps it)
	get      func(s keys.Admin, ctx context.Context, id string) (T, error)
	writes   func(s keys.Admin) keys.Records[T] // its Create and Update
	// guard authorizes c's write of v (old: the record as stored; nil
	// when new) and checks v against the records that bound it, before
	// anything is written. nil: only a proxy admin writes the kind,
	// checked before the body is read.
	guard func(h *Handler, ctx context.Context, c *caller, old, v *T) error
}

// load reads the record id, a 404 naming param when it does not exist
// (a 400 naming it when no record can have that id).
func (rk record[T]) load(h *Handler, ctx context.Context, param, id string) (T, error) {
	var zero T
	if id == "" {
		return zero, badParam(param, "required")
	}
	if err := keys.ValidID(param, id); err != nil {
		return zero, err
	}
	v, err := rk.get(h.keys, ctx, id)
	if errors.Is(err, keys.ErrNotFound) {
		return zero, notFound(param, "%s: no %s %q", param, rk.noun, id)
	}
	return v, err
}

// decode reads a proxy admin's write of a record: its id (idParam), its
// settings patch and what more reads of the route's own fields, all from
// one parse of the body.
func (rk record[T]) decode(r *http.Request, c *caller, more func(p *params)) (string, patch[T], error) {
	if rk.guard == nil {
		if err := needAdmin(c); err != nil {
			return "", patch[T]{}, err
		}
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
	old := v
	was := rk.settings(&v).BudgetID
	pt.apply(&v, rk.settings(&v))
	if err := h.linkBudget(r.Context(), c, was, rk.settings(&v)); err != nil {
		return zero, err
	}
	rk.stamp(&v, h.now(), c.name())
	if rk.guard != nil {
		if err := rk.guard(h, r.Context(), c, &old, &v); err != nil {
			return zero, err
		}
	}
	return rk.writes(h.keys).Update(r.Context(), v)
}

// updateAndShow is an update route: the update flow, answered with show of
// the record as stored (rendered after the write).
func (rk record[T]) updateAndShow(h *Handler, w http.ResponseWriter, r *http.Request, c *caller, resolve func(id string, pt patch[T]) (string, error), show func(v T) obj) error {
	v, err := rk.updated(h, r, c, resolve)
	if err != nil {
		return err
	}
	return ok(w, show(v))
}

// listed is a list route of the kind: every record, to a proxy admin or
// viewer, each shown by show; linked: with the limits of the budget it
// links (shown), as its info route shows it.
func (rk record[T]) listed(h *Handler, w http.ResponseWriter, r *http.Request, c *caller, linked bool, show func(v T, now time.Time) obj) error {
	if !c.viewer() {
		return forbidden("listing %ss needs a proxy_admin or proxy_admin_viewer", rk.noun)
	}
	vs, err := rk.writes(h.keys).List(r.Context())
	if err != nil {
		return err
	}
	for i := 0; linked && i < len(vs); i++ {
		s := rk.settings(&vs[i])
		if *s, err = h.shown(r.Context(), *s); err != nil {
			return err
		}
	}
	return ok(w, objectsAt(vs, h.now(), show))
}

// The record kinds the shared flows serve.
var (
	teams = record[keys.Team]{noun: "team", idParam: "team_id", parse: teamPatch, get: keys.Admin.GetTeam, writes: keys.Admin.Teams,
		settings: func(t *keys.Team) *keys.Settings { return &t.Settings }, stamp: func(t *keys.Team, now time.Time, _ string) { t.UpdatedAt = now },
		guard: (*Handler).guardTeam}
	users = record[keys.User]{noun: "user", idParam: "user_id", parse: userPatch, get: keys.Admin.GetUser, writes: keys.Admin.Users,
		settings: func(u *keys.User) *keys.Settings { return &u.Settings }, stamp: func(u *keys.User, now time.Time, _ string) { u.UpdatedAt = now }}
	endUsers = record[keys.EndUser]{noun: "end user", idParam: "user_id", parse: endUserPatch, get: keys.Admin.GetEndUser, writes: keys.Admin.EndUsers,
		settings: func(e *keys.EndUser) *keys.Settings { return &e.Settings }, stamp: func(e *keys.EndUser, now time.Time, _ string) { e.UpdatedAt = now }}
)

// created stores the new record v whose id is id (a taken id is the
// client's error naming idParam), runs then (nil: nothing), and reads the
// record back as stored.
func (rk record[T]) created(h *Handler, ctx context.Context, id string, v T, then func() error) (T, error) {
	var zero T
	if err := rk.writes(h.keys).Create(ctx, v); err != nil {
		if errors.Is(err, keys.ErrExists) {
			return zero, apierr.Taken(rk.noun, rk.idParam, "%s %q exists already", rk.noun, id)
		}
		return zero, err
	}
	if then != nil {
		if err := then(); err != nil {
			return zero, err
		}
	}
	return rk.get(h.keys, ctx, id)
}

// ids reads a proxy admin's list of record ids (param) and checks each
// with check (that it exists).
func (h *Handler) ids(r *http.Request, c *caller, param string, check func(ctx context.Context, id string) error) ([]string, error) {
	if err := needAdmin(c); err != nil {
		return nil, err
	}
	return h.scopedIDs(r, param, check)
}

// scopedIDs reads a list of record ids (param) and checks each with check
// (that it exists and that the caller may write it), all before any is
// written.
func (h *Handler) scopedIDs(r *http.Request, param string, check func(ctx context.Context, id string) error) ([]string, error) {
	ids, err := readIDs(r, param, "required")
	if err != nil {
		return nil, err
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

// readIDs reads a body's list of ids (param); an empty one is refused
// with why.
func readIDs(r *http.Request, param, why string) ([]string, error) {
	p, err := readParams(r)
	if err != nil {
		return nil, err
	}
	ids, _ := p.strs(param)
	if err := p.done(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, badParam(param, "%s", why)
	}
	return ids, nil
}

// appendKept appends to out the xs for which ok holds, in order, or
// returns ok's first error; out may be xs[:0], to filter in place.
func appendKept[T any](out, xs []T, ok func(T) (bool, error)) ([]T, error) {
	for _, x := range xs {
		keep, err := ok(x)
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, x)
		}
	}
	return out, nil
}
