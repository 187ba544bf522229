package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keyauth"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// The auth stage: who a request acts for (the master key or a virtual key,
// with its team, user and membership), and what the request's body asks
// that they may do (models, fallbacks, end user).

// Principal is who a request acts for, as authentication found it.
type Principal struct {
	KeyHash string // "" for the master key or an open gateway
	Master  bool
	// Records are the virtual key, its team, user, membership and
	// organization, and the request's end user, each if it has one; the
	// organization's models, budget and limits bound the request like the
	// team's.
	keyauth.Records
}

// restricted reports whether p's key, team, user or organization names the
// models it may use.
func (p *Principal) restricted() bool {
	for r := range p.records {
		if p.checksModels(r) && len(r.Settings.Models) > 0 {
			return true
		}
	}
	return false
}

// checksModels reports whether r's models bound p's requests: a key's,
// team's and organization's always; a user's only on a personal key (one
// of no team), as LiteLLM checks them (can_user_call_model "if personal
// key": a team key is bounded by its team's models, not its user's).
func (p *Principal) checksModels(r record) bool {
	return recordKinds[r.Kind].modelAccess != "" && (r.Kind != recUser || p.Team == nil)
}

// resolveAlias returns the model group a request's model names for p, as
// LiteLLM applies model aliases before routing: the team's model_aliases,
// then the user's aliases, then the key's, each looked up once in the name
// the previous left (so a key's alias may name a team alias's target):
// an order of its own, not the records' (Principal.records).
// No alias: model as is, with no allocation.
func (p *Principal) resolveAlias(model string) string {
	if p.Team != nil {
		if to, ok := p.Team.Aliases[model]; ok {
			model = to
		}
	}
	if p.User != nil {
		if to, ok := p.User.Aliases[model]; ok {
			model = to
		}
	}
	if p.Key != nil {
		if to, ok := p.Key.Aliases[model]; ok {
			model = to
		}
	}
	return model
}

// applyAliases renames req's model by p's model aliases, before anything
// reads it: model access, routing, budgets and the spend event see the
// model group the alias names (LiteLLM rewrites the request's model).
func applyAliases(p *Principal, req *wire.Request) {
	if m := p.resolveAlias(req.Model); m != req.Model {
		req.Rename(m)
	}
}

// Authenticator checks a request's bearer token, and the end user its
// body names. The seam for virtual keys.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*Principal, error)
	// EndUser checks the request's end user (its "user" field, id) and
	// attaches its record to p, if it has one: authentication's last
	// step, once the body is read.
	EndUser(ctx context.Context, p *Principal, id string) error
}

func (h *Handler) authenticate(r *http.Request) (*Principal, error) {
	return h.auth.Authenticate(r.Context(), Bearer(r))
}

// Bearer reads the key as LiteLLM does (and the admin API): from
// x-litellm-api-key, then Authorization (Bearer), then the api-key and
// x-api-key headers Azure and Anthropic SDKs send.
func Bearer(r *http.Request) string {
	if v := strings.TrimSpace(r.Header.Get("X-Litellm-Api-Key")); v != "" {
		return trimBearer(v)
	}
	if a := r.Header.Get("Authorization"); a != "" {
		return trimBearer(a)
	}
	if k := r.Header.Get("Api-Key"); k != "" {
		return k
	}
	return r.Header.Get("X-Api-Key")
}

// trimBearer is a header's key without its "Bearer " scheme, if any.
func trimBearer(v string) string {
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return strings.TrimSpace(v)
}

// masterKey authenticates against general_settings.master_key; with none set,
// the gateway is open (LiteLLM's behaviour).
type masterKey string

func (m masterKey) Authenticate(_ context.Context, token string) (*Principal, error) {
	if m == "" {
		return &Principal{}, nil
	}
	if token == "" {
		return nil, apierr.New(apierr.Unauthorized, "%s", apierr.Detail(apierr.MsgNoKey, "Send it as 'Authorization: Bearer <key>'."))
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(m)) != 1 {
		return nil, apierr.New(apierr.Unauthorized, "%s", apierr.Detail(apierr.MsgInvalidKey, "(invalid API key)"))
	}
	return &Principal{Master: true}, nil
}

// EndUser: the master key alone reads no end user records.
func (masterKey) EndUser(context.Context, *Principal, string) error { return nil }

// KeyReader reads virtual keys, teams, users, memberships and end users
// (keys.Reader); keys.Cached in production, so that the common request
// reads them from this instance's memory.
type KeyReader = keys.Reader

// access authenticates with the master key or a virtual key (keyauth, the
// check the admin API shares). With no master key the gateway is open
// (LiteLLM's behaviour) and virtual keys are not read.
type access struct {
	master masterKey
	keys   KeyReader // nil: master key only
	auth   keyauth.Authenticator
	now    func() time.Time
}

func newAccess(master string, ks KeyReader, now func() time.Time) *access {
	if ks != nil {
		// Records that link a reusable budget are checked and admitted
		// with its limits (max_budget, rpm/tpm, ...): resolved here, once,
		// for keyauth, the end user check and the admission alike.
		ks = keys.Linked{Reader: ks}
	}
	return &access{master: masterKey(master), keys: ks, auth: keyauth.Authenticator{Keys: ks, Now: now}, now: now}
}

func (a *access) Authenticate(ctx context.Context, token string) (*Principal, error) {
	if a.master == "" || a.keys == nil {
		return a.master.Authenticate(ctx, token)
	}
	if p, err := a.master.Authenticate(ctx, token); err == nil {
		return p, nil
	} else if token == "" {
		return nil, err
	}
	r, err := a.auth.Authenticate(ctx, token)
	if err != nil {
		var d *keyauth.Denied
		if !errors.As(err, &d) {
			return nil, err
		}
		if d.Reason == keyauth.OverBudget {
			return nil, scoped(d.Scope, d.Err)
		}
		return nil, d.Err
	}
	return &Principal{KeyHash: r.Key.Hash, Records: r}, nil
}

// EndUser checks the request's end user (its "user" field) against its
// /customer record, if it has one: blocked, budget. An end user without a
// record is not limited (its spend is still logged).
func (a *access) EndUser(ctx context.Context, p *Principal, id string) error {
	if id == "" || a.keys == nil || a.master == "" {
		return nil
	}
	if any, err := a.keys.HasEndUsers(ctx); err != nil {
		return unavailable("the end users", err)
	} else if !any {
		return nil
	}
	e, err := a.keys.GetEndUser(ctx, id)
	switch {
	case errors.Is(err, keys.ErrNotFound):
		return nil
	case err != nil:
		return unavailable("the end user", err)
	}
	if e.Blocked {
		err := apierr.New(apierr.Forbidden, "end user %s is blocked", id)
		err.Param = "user"
		return err
	}
	if err := keyauth.BudgetError("end_user", e.Budget, a.now(), id); err != nil {
		return scoped("end_user", err)
	}
	p.EndUser = &e
	return nil
}

func unavailable(what string, err error) error {
	return &apierr.Error{Kind: apierr.Unavailable, Message: "could not check " + what + "; try again", Cause: err}
}

// checkPrincipal checks what a request's body decides: the model access of
// p's key, team and user, for the model and for every per-request fallback
// (as LiteLLM does: the router would call them with the deployment's
// credentials), and the request's end user. pl is the request's plan.
func (h *Handler) checkPrincipal(ctx context.Context, p *Principal, req *wire.Request, pl *plan) error {
	if p.restricted() {
		if pl.err != nil {
			// A model no group serves: the models listed are the ones p
			// may use, not every model of the config.
			return router.ErrNotFound(req.Model, h.allowedOf(p, nil, h.router.Models()))
		}
		if err := allowModel(p, h.cfg.AccessGroups, req.Model, pl.group()); err != nil {
			return err
		}
		for i, fb := range req.Fallbacks {
			// An unknown fallback is skipped by the router; it is still
			// checked by name, so that a refusal does not depend on what
			// the model list holds today.
			if err := allowModel(p, h.cfg.AccessGroups, fb, pl.fallback(i).Group()); err != nil {
				if e, ok := err.(*apierr.Error); ok {
					e.Message += " (in fallbacks)"
					e.Param = "fallbacks"
				}
				return err
			}
		}
	}
	if p.Key != nil && len(p.Key.ModelMaxBudget) > 0 {
		if err := modelBudgetError(p.Key, req.Model, h.now()); err != nil {
			return err
		}
	}
	if req.User != "" {
		return h.auth.EndUser(ctx, p, req.User)
	}
	return nil
}

// fallbackAccess is the router's check of a configured fallback for p
// (router.Request.Allowed), with the config's access groups ag: nil, and
// no closure allocated, when p may use every model.
func (p *Principal) fallbackAccess(ag map[string][]string) func(model, group string) error {
	if p == nil || !p.restricted() {
		return nil
	}
	return func(model, group string) error { return allowModel(p, ag, model, group) }
}

// hdrFallbacksSkipped names the configured fallbacks the principal may not
// use, with the reason, on an error when every one was skipped (LiteLLM has
// no such header; a client otherwise sees only the first group's error).
const hdrFallbacksSkipped = "X-Sluice-Fallbacks-Skipped"

// setFallbacksSkipped sets hdrFallbacksSkipped when no fallback was tried
// because every candidate was outside the principal's models.
func setFallbacksSkipped(hd http.Header, res *router.Result) {
	if res == nil || len(res.Skipped) == 0 || res.Fallbacks > 0 {
		return
	}
	hd[hdrFallbacksSkipped] = []string{strings.Join(res.Skipped, "; ")}
}

// allowModel checks a key's (and its team's, user's and organization's) model access. An
// empty list allows every model, as in LiteLLM; the list may name the alias
// the client sent or the model group it resolves to, "*" /
// "all-proxy-models", or a model access group (ag: access group -> model
// groups, config.Config.AccessGroups) that holds the group.
func allowModel(p *Principal, ag map[string][]string, model, group string) error {
	for r := range p.records {
		if p.checksModels(r) {
			if err := checkModels(recordKinds[r.Kind].modelAccess, r.Settings.Models, ag, model, group); err != nil {
				return err
			}
		}
	}
	return nil
}
