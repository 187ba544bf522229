package adminapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// newSecret returns "sk-" and 192 bits from crypto/rand.
func newSecret() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "sk-" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// keyName is LiteLLM's display form of a secret: "sk-..." and its last 4.
func keyName(secret string) string {
	if len(secret) < 8 {
		return "sk-..."
	}
	return "sk-..." + secret[len(secret)-4:]
}

// secretParam reads a caller-chosen secret ("key" or "new_key").
func secretParam(p *params, name string) (string, bool) {
	s, ok := p.str(name)
	if !ok {
		return "", false
	}
	if !strings.HasPrefix(s, "sk-") || len(s) < 8 {
		p.fail(badParam(name, "a key must start with sk- and be at least 8 characters"))
		return "", false
	}
	return s, true
}

// keyStoreError maps key write errors to the client's.
func keyStoreError(err error) error {
	switch {
	case errors.Is(err, keys.ErrAliasExists):
		return apierr.Taken("key", "key_alias", "another key has this key_alias")
	case errors.Is(err, keys.ErrExists):
		return apierr.Taken("key", "key", "this key exists already")
	}
	return err
}

// generated answers generate and regenerate: the key object, the secret
// (shown once), and LiteLLM's token fields.
func generated(w http.ResponseWriter, k keys.Key, secret, duration string, now time.Time) error {
	o := keyObject(k, now)
	o["key"] = secret
	o["token_id"] = k.Hash
	o["duration"] = orNil(duration)
	return ok(w, o)
}

func (h *Handler) keyGenerate(w http.ResponseWriter, r *http.Request, c *caller) error {
	p, err := readParams(r)
	if err != nil {
		return err
	}
	now := h.now()
	secret, given := secretParam(p, "key")
	k := keys.Key{CreatedAt: now, CreatedBy: c.name(), UpdatedAt: now, UpdatedBy: c.name()}
	pt := keyPatch(p, now)
	pt.apply(&k, &k.Settings)
	duration := pt.duration
	if err := p.done(); err != nil {
		return err
	}
	ownKeyUser(c, &k)
	if err := h.mayWriteKey(r.Context(), c, k); err != nil {
		return err
	}
	if err := h.bind(r.Context(), c, nil, &k, true); err != nil {
		return err
	}
	if k.TeamID != "" {
		if _, err := h.keys.GetTeam(r.Context(), k.TeamID); errors.Is(err, keys.ErrNotFound) {
			return &apierr.Error{Kind: apierr.NotFound, Message: "team_id: no team " + k.TeamID, Param: "team_id"}
		}
	}
	if !given {
		if secret, err = newSecret(); err != nil {
			return err
		}
	}
	k.Hash, k.KeyName = keys.HashSecret(secret), keyName(secret)
	if err := h.keys.CreateKey(r.Context(), k); err != nil {
		return keyStoreError(err)
	}
	stored, err := h.keys.GetKey(r.Context(), k.Hash)
	if err != nil {
		stored = k
	}
	return generated(w, stored, secret, duration, now)
}

// loadKey reads the key a parameter names (secret or hash).
func (h *Handler) loadKey(ctx context.Context, param, v string) (keys.Key, error) {
	if v == "" {
		return keys.Key{}, badParam(param, "required")
	}
	k, err := h.keys.GetKey(ctx, keyHash(v))
	if errors.Is(err, keys.ErrNotFound) {
		return keys.Key{}, &apierr.Error{Kind: apierr.NotFound, Message: param + ": no such key", Param: param}
	}
	return k, err
}

// changeKey is what /key/update and /key/regenerate share: it reads the
// key settings of the body (done: the body is read), loads the key ref
// names, checks that c may change it, applies the settings and checks that
// c may write the result (and change its blocked state so).
func (h *Handler) changeKey(ctx context.Context, c *caller, p *params, ref string, now time.Time, handsOver bool) (old, k keys.Key, pt patch[keys.Key], err error) {
	pt = keyPatch(p, now)
	if err = p.done(); err != nil {
		return old, k, pt, err
	}
	if old, err = h.loadKey(ctx, "key", ref); err != nil {
		return old, k, pt, err
	}
	if err = h.mayChangeKey(ctx, c, old); err != nil {
		return old, k, pt, err
	}
	k = old
	pt.apply(&k, &k.Settings)
	if err = notUserless(c, old, k); err != nil {
		return old, k, pt, err
	}
	if err = h.mayWriteKey(ctx, c, k); err != nil {
		return old, k, pt, err
	}
	if err = h.bind(ctx, c, &old, &k, handsOver); err != nil {
		return old, k, pt, err
	}
	return old, k, pt, h.mayChangeBlocked(ctx, c, old, k)
}

func (h *Handler) keyUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	p, err := readParams(r)
	if err != nil {
		return err
	}
	ref, _ := p.str("key")
	now := h.now()
	old, k, _, err := h.changeKey(r.Context(), c, p, ref, now, false)
	if err != nil {
		return err
	}
	k.UpdatedAt, k.UpdatedBy = now, c.name()
	if k.TeamID != "" && k.TeamID != old.TeamID {
		if _, err := h.keys.GetTeam(r.Context(), k.TeamID); errors.Is(err, keys.ErrNotFound) {
			return &apierr.Error{Kind: apierr.NotFound, Message: "team_id: no team " + k.TeamID, Param: "team_id"}
		}
	}
	updated, err := h.keys.UpdateKey(r.Context(), k)
	if err != nil {
		return keyStoreError(err)
	}
	o := keyObject(updated, now)
	o["key"] = updated.Hash
	return ok(w, o)
}

func (h *Handler) keyDelete(w http.ResponseWriter, r *http.Request, c *caller) error {
	p, err := readParams(r)
	if err != nil {
		return err
	}
	refs, _ := p.strs("keys")
	aliases, _ := p.strs("key_aliases")
	if err := p.done(); err != nil {
		return err
	}
	if len(refs) == 0 && len(aliases) == 0 {
		return badParam("keys", "give keys or key_aliases")
	}
	ctx := r.Context()
	var todo []keys.Key
	for _, ref := range refs {
		k, err := h.loadKey(ctx, "keys", ref)
		if err != nil {
			return err
		}
		todo = append(todo, k)
	}
	for _, a := range aliases {
		k, err := h.keys.GetKeyByAlias(ctx, a)
		if errors.Is(err, keys.ErrNotFound) {
			return &apierr.Error{Kind: apierr.NotFound, Message: "key_aliases: no key with alias " + a, Param: "key_aliases"}
		}
		if err != nil {
			return err
		}
		todo = append(todo, k)
	}
	for _, k := range todo {
		if err := h.mayTouchKey(ctx, c, k, false); err != nil {
			return err
		}
	}
	deleted := []string{}
	for _, k := range todo {
		if _, err := h.keys.ArchiveKey(ctx, k.Hash, c.name()); err != nil && !errors.Is(err, keys.ErrNotFound) {
			return err
		}
		deleted = append(deleted, k.Hash)
	}
	return ok(w, obj{"deleted_keys": deleted})
}

func (h *Handler) keyBlock(w http.ResponseWriter, r *http.Request, c *caller) error {
	return h.setKeyBlocked(w, r, c, true)
}

func (h *Handler) keyUnblock(w http.ResponseWriter, r *http.Request, c *caller) error {
	return h.setKeyBlocked(w, r, c, false)
}

// setKeyBlocked blocks or unblocks a key: a proxy admin, or a team admin
// for its team's keys.
func (h *Handler) setKeyBlocked(w http.ResponseWriter, r *http.Request, c *caller, blocked bool) error {
	ref, err := readParam(r, "key")
	if err != nil {
		return err
	}
	k, err := h.loadKey(r.Context(), "key", ref)
	if err != nil {
		return err
	}
	if err := h.mayBlockKey(r.Context(), c, k); err != nil {
		return err
	}
	if err := h.keys.Block(r.Context(), keys.Ref{Kind: keys.KindKey, ID: k.Hash}, blocked); err != nil {
		return err
	}
	k, err = h.keys.GetKey(r.Context(), k.Hash)
	if err != nil {
		return err
	}
	return ok(w, keyObject(k, h.now()))
}

func (h *Handler) keyRegenerate(w http.ResponseWriter, r *http.Request, c *caller) error {
	return h.regenerate(w, r, c, "")
}

// regenerate replaces a key's secret (LiteLLM's /key/regenerate and
// /key/{key}/regenerate), keeping its record and spend; the old secret
// stops working. Settings in the body are applied as in /key/update.
func (h *Handler) regenerate(w http.ResponseWriter, r *http.Request, c *caller, pathKey string) error {
	p, err := readParams(r)
	if err != nil {
		return err
	}
	ref, _ := p.str("key")
	if pathKey != "" {
		ref = pathKey
	}
	secret, given := secretParam(p, "new_key")
	now := h.now()
	old, k, pt, err := h.changeKey(r.Context(), c, p, ref, now, true)
	if err != nil {
		return err
	}
	if !given {
		if secret, err = newSecret(); err != nil {
			return err
		}
	}
	k.Hash, k.KeyName, k.UpdatedAt, k.UpdatedBy = keys.HashSecret(secret), keyName(secret), now, c.name()
	nk, err := h.keys.RegenerateKey(r.Context(), old.Hash, k)
	if err != nil {
		if errors.Is(err, keys.ErrExists) && !errors.Is(err, keys.ErrAliasExists) {
			return apierr.Taken("key", "new_key", "this key exists already")
		}
		return keyStoreError(err)
	}
	return generated(w, nk, secret, pt.duration, now)
}

func (h *Handler) keyInfo(w http.ResponseWriter, r *http.Request, c *caller) error {
	ref := strings.TrimSpace(r.URL.Query().Get("key"))
	var k keys.Key
	if ref == "" {
		if c.key == nil {
			return badParam("key", "the master key is not a virtual key: pass ?key=")
		}
		k = *c.key
	} else {
		var err error
		if k, err = h.loadKey(r.Context(), "key", ref); err != nil {
			return err
		}
	}
	if err := h.mayReadKey(r.Context(), c, k); err != nil {
		return err
	}
	return ok(w, obj{"key": k.Hash, "info": keyObject(k, h.now())})
}

func (h *Handler) keyList(w http.ResponseWriter, r *http.Request, c *caller) error {
	q := &query{r: r}
	page := q.int("page", 1, 1, 1_000_000)
	size := q.int("size", 10, 1, 100)
	f := keys.KeyFilter{UserID: q.str("user_id"), TeamID: q.str("team_id"), Alias: q.str("key_alias")}
	full := q.boolean("return_full_object")
	status := q.str("status")
	if q.err != nil {
		return q.err
	}
	if status != "" && status != "deleted" && status != "active" {
		return badParam("status", "want deleted (or nothing), got %q", status)
	}
	ctx := r.Context()
	if !c.viewer() {
		role, err := h.teamRole(ctx, c, f.TeamID)
		if err != nil {
			return err
		}
		switch {
		case f.TeamID != "" && role == keys.MemberAdmin:
		case c.userID == "":
			return forbidden("a key that belongs to no user may not list keys")
		case f.UserID != "" && f.UserID != c.userID:
			return forbidden("you may list only your own keys")
		default:
			f.UserID = c.userID
		}
	}
	now := h.now()
	var items []any
	var hashes []string
	if status == "deleted" {
		del, err := h.keys.ListDeletedKeys(ctx, f)
		if err != nil {
			return err
		}
		for _, d := range del {
			if in, err := h.held(ctx, c, d.Key); err != nil {
				return err
			} else if !in {
				continue
			}
			o := keyObject(d.Key, now)
			o["deleted_at"], o["deleted_by"] = ts(d.DeletedAt), orNil(d.DeletedBy)
			items, hashes = append(items, o), append(hashes, d.Hash)
		}
	} else {
		ks, err := h.keys.ListKeys(ctx, f)
		if err == nil {
			ks, err = h.inScopeKeys(ctx, c, ks)
		}
		if err != nil {
			return err
		}
		for _, k := range ks {
			items, hashes = append(items, keyObject(k, now)), append(hashes, k.Hash)
		}
	}
	total := len(items)
	lo, hi := min((page-1)*size, total), min(page*size, total)
	out := obj{"total_count": total, "current_page": page, "total_pages": (total + size - 1) / size}
	if full || status == "deleted" {
		out["keys"] = append([]any{}, items[lo:hi]...)
	} else {
		out["keys"] = append([]string{}, hashes[lo:hi]...)
	}
	return ok(w, out)
}
