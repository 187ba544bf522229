package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/wire"
)

// The auth stage: who a request acts for (the master key or a virtual key,
// with its team, user and membership), and what the request's body asks
// that they may do (models, fallbacks, end user).

// Principal is who a request acts for, as authentication found it.
type Principal struct {
	KeyHash string // "" for the master key or an open gateway
	Master  bool
	Key     *keys.Key     // the virtual key, if one was used
	Team    *keys.Team    // the key's team, if it has one
	User    *keys.User    // the key's user, if it has one and the user exists
	Member  *keys.Member  // the user's membership of the key's team, if it exists
	EndUser *keys.EndUser // the request's end user ("user"), if registered
}

// restricted reports whether p's key, team or user names the models it may use.
func (p *Principal) restricted() bool {
	return (p.Key != nil && len(p.Key.Models) > 0) || (p.Team != nil && len(p.Team.Models) > 0) ||
		(p.User != nil && len(p.User.Models) > 0)
}

// Authenticator checks a request's bearer token. The seam for virtual keys.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*Principal, error)
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
		return nil, apierr.New(apierr.Unauthorized, "missing API key: send it as 'Authorization: Bearer <key>'")
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(m)) != 1 {
		return nil, apierr.New(apierr.Unauthorized, "invalid API key")
	}
	return &Principal{Master: true}, nil
}

// KeyReader reads virtual keys, teams, users, memberships and end users;
// keys.Cached in production, so that the common request reads them from
// this instance's memory.
type KeyReader interface {
	GetKey(ctx context.Context, hash string) (keys.Key, error)
	GetTeam(ctx context.Context, id string) (keys.Team, error)
	GetUser(ctx context.Context, id string) (keys.User, error)
	GetMember(ctx context.Context, team, user string) (keys.Member, error)
	GetEndUser(ctx context.Context, id string) (keys.EndUser, error)
	// HasEndUsers reports whether any end user record exists (cached like
	// the records), so that requests pay no lookup while none does.
	HasEndUsers(ctx context.Context) (bool, error)
}

// access authenticates with the master key or a virtual key. With no master
// key the gateway is open (LiteLLM's behaviour) and virtual keys are not read.
type access struct {
	master masterKey
	keys   KeyReader // nil: master key only
	now    func() time.Time
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
	hash := keys.HashSecret(token)
	k, err := a.keys.GetKey(ctx, hash)
	switch {
	case errors.Is(err, keys.ErrNotFound):
		return nil, apierr.New(apierr.Unauthorized, "invalid API key")
	case err != nil:
		return nil, unavailable("the API key", err)
	}
	p := &Principal{KeyHash: hash, Key: &k}
	now := a.now()
	switch {
	case k.Blocked:
		return nil, apierr.New(apierr.Unauthorized, "this key is blocked")
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		return nil, apierr.New(apierr.Unauthorized, "this key has expired")
	}
	if err := budgetError("key", k.Budget, now); err != nil {
		return nil, scoped("key", err)
	}
	if k.TeamID != "" {
		t, err := a.keys.GetTeam(ctx, k.TeamID)
		switch {
		case errors.Is(err, keys.ErrNotFound):
			return nil, apierr.New(apierr.Unauthorized, "the key's team %q no longer exists", k.TeamID)
		case err != nil:
			return nil, unavailable("the API key's team", err)
		}
		if t.Blocked {
			return nil, apierr.New(apierr.Unauthorized, "team %s is blocked", t.ID)
		}
		if err := budgetError("team "+t.ID, t.Budget, now); err != nil {
			return nil, scoped("team", err)
		}
		p.Team = &t
	}
	if k.UserID != "" {
		u, err := a.keys.GetUser(ctx, k.UserID)
		switch {
		case err == nil:
			if err := budgetError("user "+u.ID, u.Budget, now); err != nil {
				return nil, scoped("user", err)
			}
			p.User = &u
		case !errors.Is(err, keys.ErrNotFound): // a key may name a user with no record
			return nil, unavailable("the API key's user", err)
		}
	}
	if p.User != nil && p.Team != nil {
		m, err := a.keys.GetMember(ctx, k.TeamID, k.UserID)
		switch {
		case err == nil:
			if err := budgetError("team member "+m.UserID+" of team "+m.TeamID, m.Budget, now); err != nil {
				return nil, scoped("team_member", err)
			}
			p.Member = &m
		case !errors.Is(err, keys.ErrNotFound):
			return nil, unavailable("the API key's team membership", err)
		}
	}
	return p, nil
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
	if err := budgetError("end user "+id, e.Budget, a.now()); err != nil {
		return scoped("end_user", err)
	}
	p.EndUser = &e
	return nil
}

func unavailable(what string, err error) error {
	return &apierr.Error{Kind: apierr.Unavailable, Message: "could not check " + what + "; try again", Cause: err}
}

// budgetError is the client's error when b is spent at now: a 400 of type
// budget_exceeded naming the budget, its spend and its limit (LiteLLM
// blocks at spend >= max_budget).
func budgetError(what string, b keys.Budget, now time.Time) error {
	if !b.Exceeded(now) {
		return nil
	}
	msg := fmt.Sprintf("Budget has been exceeded: %s has spent $%s of its max_budget of $%s", what, usd(b.Current(now)), usd(*b.MaxBudget))
	if b.Duration != "" {
		msg += fmt.Sprintf(" in the current %s period, which resets at %s", b.Duration, b.ResetAt(now).Format(time.RFC3339))
	}
	return apierr.New(apierr.BudgetExceeded, "%s", msg)
}

func usd(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// checkPrincipal checks what a request's body decides: the model access of
// p's key, team and user, for the model and for every per-request fallback
// (as LiteLLM does: the router would call them with the deployment's
// credentials), and the request's end user.
func (h *Handler) checkPrincipal(ctx context.Context, p *Principal, req *wire.Request) error {
	if p.restricted() {
		group, err := h.router.Group(req.Model)
		if err == nil {
			err = allowModel(p, req.Model, group)
		}
		if err != nil {
			return err
		}
		for _, fb := range req.Fallbacks {
			// An unknown fallback is skipped by the router; it is still
			// checked by name, so that a refusal does not depend on what
			// the model list holds today.
			group, _ := h.router.Group(fb)
			if err := allowModel(p, fb, group); err != nil {
				if e, ok := err.(*apierr.Error); ok {
					e.Message += " (in fallbacks)"
					e.Param = "fallbacks"
				}
				return err
			}
		}
	}
	if req.User != "" {
		if a, ok := h.auth.(*access); ok {
			return a.EndUser(ctx, p, req.User)
		}
	}
	return nil
}

// allowModel checks a key's (and its team's) model access. An empty list
// allows every model, as in LiteLLM; the list may name the alias the client
// sent or the model group it resolves to, or "*" / "all-proxy-models".
func allowModel(p *Principal, model, group string) error {
	check := func(what string, allowed []string) error {
		if len(allowed) == 0 || slices.Contains(allowed, model) || slices.Contains(allowed, group) ||
			slices.Contains(allowed, "*") || slices.Contains(allowed, "all-proxy-models") {
			return nil
		}
		e := apierr.New(apierr.Forbidden, "this %s may not use model %q; allowed: %v", what, model, allowed)
		e.Param = "model"
		return e
	}
	if p.Key != nil {
		if err := check("key", p.Key.Models); err != nil {
			return err
		}
	}
	if p.Team != nil {
		if err := check("team", p.Team.Models); err != nil {
			return err
		}
	}
	if p.User != nil {
		return check("user", p.User.Models)
	}
	return nil
}
