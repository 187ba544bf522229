package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

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
		if u := p.User; u != nil && (u.RPMLimit > 0 || u.TPMLimit > 0) {
			req.Scopes = append(req.Scopes, limits.Scope{Kind: limits.KindUser, ID: u.ID, RPM: u.RPMLimit, TPM: u.TPMLimit, Shards: limits.ShardsFor(u.RPMLimit), OnError: onErr})
		}
		if e := p.EndUser; e != nil && (e.RPMLimit > 0 || e.TPMLimit > 0) {
			req.Scopes = append(req.Scopes, limits.Scope{Kind: limits.KindEndUser, ID: e.ID, RPM: e.RPMLimit, TPM: e.TPMLimit, Shards: limits.ShardsFor(e.RPMLimit), OnError: onErr})
		}
	}
	d := a.Deployment
	if d.RPM > 0 || d.TPM > 0 {
		req.Scopes = append(req.Scopes, limits.Scope{Kind: limits.KindDeployment, ID: d.ID, RPM: d.RPM, TPM: d.TPM, Shards: limits.ShardsFor(d.RPM), OnError: onErr})
	}
	if x.hold != nil {
		if !x.admitted {
			req.Hold = x.hold
		} else if x.c.CostNanos > 0 {
			// The reservation covers one billed attempt's worst case: once
			// an attempt was billed, another might not fit in what is left.
			a.Abort = true
			return apierr.New(apierr.BudgetExceeded, "strict_budgets: an earlier attempt of this request was billed $%s of its $%s reservation; another attempt is not made",
				keys.DecimalUSD(x.c.CostNanos), keys.DecimalUSD(x.hold.Amount))
		}
	}
	if len(req.Scopes) == 0 && req.Hold == nil {
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
		h.metrics.FailOpen()
		h.log.LogAttrs(ctx, slog.LevelWarn, "limits failed open", slog.String("call_id", x.c.CallID))
	}
	if !dec.Allowed {
		return x.rejected(a, dec)
	}
	x.admitted = true
	if req.Hold != nil {
		x.c.Hold = req.Hold
	}
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
		x.c.Refused = string(s.Kind)
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
	a.Abort = true
	if dec.Reason == limits.ReasonBudget && dec.BlockedBudget != nil && x.hold != nil {
		x.c.Refused = budgetScope(dec.BlockedBudget.Kind)
		return holdError(x.hold, dec.BlockedBudget, dec.Committed)
	}
	// Only scope reasons can come back here.
	return apierr.New(apierr.Forbidden, "refused by limits: %s", dec.Reason)
}

func scopeName(k limits.Kind) string {
	switch k {
	case limits.KindKey:
		return "key"
	case limits.KindTeam:
		return "team"
	case limits.KindUser:
		return "user"
	case limits.KindEndUser:
		return "end user"
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

// budgetScope is the metrics scope of a strict-budget counter's kind.
func budgetScope(kind string) string {
	switch keys.Kind(kind) {
	case keys.KindMember:
		return "team_member"
	case keys.KindEndUser:
		return "end_user"
	}
	return kind
}
