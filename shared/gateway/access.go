package gateway

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/router"
)

// KeyReader reads virtual keys and teams; keys.Cached in production, so that
// the common request reads them from this instance's memory.
type KeyReader interface {
	GetKey(ctx context.Context, hash string) (keys.Key, error)
	GetTeam(ctx context.Context, id string) (keys.Team, error)
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
		return nil, &apierr.Error{Kind: apierr.Unavailable, Message: "could not check the API key; try again", Cause: err}
	}
	p := &Principal{KeyHash: hash, Key: &k}
	now := a.now()
	if err := guardError("key", k.GuardState(), now); err != nil {
		return nil, err
	}
	if k.TeamID != "" {
		t, err := a.keys.GetTeam(ctx, k.TeamID)
		switch {
		case errors.Is(err, keys.ErrNotFound):
			return nil, apierr.New(apierr.Unauthorized, "the key's team %q no longer exists", k.TeamID)
		case err != nil:
			return nil, &apierr.Error{Kind: apierr.Unavailable, Message: "could not check the API key's team; try again", Cause: err}
		}
		if err := guardError("team", t.GuardState(), now); err != nil {
			return nil, err
		}
		p.Team = &t
	}
	return p, nil
}

// guardError turns a failed key or team guard into the client's error.
func guardError(what string, s limits.GuardState, now time.Time) error {
	if r := s.Check(now); r != "" {
		return reasonError(what, r, s.MaxBudget)
	}
	return nil
}

func reasonError(what string, r limits.Reason, budget *float64) error {
	switch r {
	case limits.ReasonBlocked:
		return apierr.New(apierr.Unauthorized, "this %s is blocked", what)
	case limits.ReasonExpired:
		return apierr.New(apierr.Unauthorized, "this %s has expired", what)
	case limits.ReasonBudget:
		if budget != nil {
			return apierr.New(apierr.BudgetExceeded, "this %s has spent its budget of $%.2f", what, *budget)
		}
		return apierr.New(apierr.BudgetExceeded, "this %s has spent its budget", what)
	}
	return apierr.New(apierr.Unauthorized, "invalid API key")
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
		return check("team", p.Team.Models)
	}
	return nil
}

// admit counts an attempt against the shared limits before the upstream
// call: the key's and team's scopes once per request (with the first
// attempt), the deployment's own rpm/tpm on every attempt. It is one store
// call, or none when nothing is limited.
//
// Key and team state (blocked, expired, budget) is checked at
// authentication from the per-instance key cache, not as guards in this
// write: a guard would put the key's own item into every transaction, and
// concurrent transactions on one item conflict, so a busy key would
// serialise its own requests. Spend reaches the key item through the spend
// queue anyway, so a guard could not make the budget exact either.
func (x *exchange) admit(ctx context.Context, a *router.Attempt) error {
	h := x.h
	if h.limits == nil {
		return nil
	}
	p := x.c.Principal
	req := limits.AdmitRequest{Now: h.now(), Tokens: x.estimate}
	onErr := limits.FailOpen
	if !h.cfg.General.RateLimitsFailOpen {
		onErr = limits.FailClosed
	}
	if !x.admitted && p != nil {
		if k := p.Key; k != nil && (k.RPMLimit > 0 || k.TPMLimit > 0) {
			req.Scopes = append(req.Scopes, limits.Scope{Kind: limits.KindKey, ID: k.Hash, RPM: k.RPMLimit, TPM: k.TPMLimit, Shards: limits.ShardsFor(k.RPMLimit), OnError: onErr})
		}
		if t := p.Team; t != nil && (t.RPMLimit > 0 || t.TPMLimit > 0) {
			req.Scopes = append(req.Scopes, limits.Scope{Kind: limits.KindTeam, ID: t.ID, RPM: t.RPMLimit, TPM: t.TPMLimit, Shards: limits.ShardsFor(t.RPMLimit), OnError: onErr})
		}
	}
	d := a.Deployment
	if d.RPM > 0 || d.TPM > 0 {
		req.Scopes = append(req.Scopes, limits.Scope{Kind: limits.KindDeployment, ID: d.ID, RPM: d.RPM, TPM: d.TPM, Shards: limits.ShardsFor(d.RPM), OnError: onErr})
	}
	if len(req.Scopes) == 0 {
		x.admitted = true
		return nil
	}
	dec, err := h.limits.Admit(ctx, req)
	if err != nil {
		a.Abort = true
		if errors.Is(err, limits.ErrUnavailable) {
			return &apierr.Error{Kind: apierr.Unavailable, Message: "could not check limits and budgets; try again", Cause: err}
		}
		return &apierr.Error{Kind: apierr.Internal, Message: "internal error", Cause: err}
	}
	if dec.FailedOpen {
		h.log.LogAttrs(ctx, slog.LevelWarn, "limits failed open", slog.String("call_id", x.c.CallID))
	}
	if !dec.Allowed {
		return x.rejected(a, dec)
	}
	x.admitted = true
	if len(dec.Admission.Slots) > 0 {
		x.admissions = append(x.admissions, dec.Admission)
	}
	return nil
}

// rejected maps a refused admission to the client's error. A deployment at
// its own limit is another deployment's chance; the key's or team's own
// limit ends the request.
func (x *exchange) rejected(a *router.Attempt, dec limits.Decision) error {
	switch dec.Reason {
	case limits.ReasonRPM, limits.ReasonTPM:
		s := dec.BlockedScope
		if s.Kind == limits.KindDeployment {
			e := apierr.New(apierr.RateLimited, "deployment %s is at its %s limit", s.ID, dec.Reason)
			e.RetryAfter = dec.RetryAfter
			return e
		}
		a.Abort = true
		limit := s.RPM
		if dec.Reason == limits.ReasonTPM {
			limit = s.TPM
		}
		e := apierr.New(apierr.RateLimited, "%s %s limit of %d per minute reached", scopeName(s.Kind), dec.Reason, limit)
		e.RetryAfter = dec.RetryAfter
		return e
	}
	// Only scope reasons can come back: the gateway sends no guards (see admit).
	a.Abort = true
	return reasonError("key", dec.Reason, nil)
}

func scopeName(k limits.Kind) string {
	switch k {
	case limits.KindKey:
		return "key"
	case limits.KindTeam:
		return "team"
	case limits.KindUser:
		return "user"
	}
	return string(k)
}

// correctTokens replaces the admitted token estimate with the real usage:
// on the key and team counters and on the deployment that served.
func (x *exchange) correctTokens(ctx context.Context, final *router.Attempt) {
	if x.h.limits == nil || len(x.admissions) == 0 || !x.c.HasUsage || final == nil {
		return
	}
	delta := x.c.Usage.TotalTokens - x.estimate
	if delta == 0 {
		return
	}
	last := len(x.admissions) - 1
	for i, adm := range x.admissions {
		slots := adm.Slots[:0:0]
		for _, s := range adm.Slots {
			if s.Kind != limits.KindDeployment || (i == last && s.ID == final.Deployment.ID) {
				slots = append(slots, s)
			}
		}
		if len(slots) == 0 {
			continue
		}
		adm.Slots = slots
		if err := x.h.limits.AdjustTokens(ctx, adm, delta); err != nil {
			x.h.log.LogAttrs(ctx, slog.LevelWarn, "tpm correction failed", slog.String("call_id", x.c.CallID), slog.String("error", err.Error()))
		}
	}
}
