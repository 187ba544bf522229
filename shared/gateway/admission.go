package gateway

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/router"
)

// The admission stage: each attempt is counted against the shared rpm/tpm
// limits (and, under strict budgets, reserves its worst case) before the
// upstream call; the token estimate is corrected once the usage is known.

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
//
// A refusal that is the request's own (its key's limit, its budget, a
// store that cannot answer) aborts the request: the Outcome tells the
// router so. A deployment at its own limit is a plain failure, another
// deployment's chance.
func (x *exchange) admit(ctx context.Context, a *router.Attempt) (router.Outcome, error) {
	h := x.h
	if h.limits == nil || x.api.uncounted { // count_tokens (count.go)
		return router.Outcome{}, nil
	}
	p := x.c.Principal
	if !x.admitted { // a max_tokens above the deployment's output limit counts as that limit
		x.estimate = limits.TokenEstimate(x.prompt, x.req.MaxTokens, x.req.N, int64(a.Deployment.MaxOutputTokens))
	}
	req := limits.AdmitRequest{Now: h.now(), Tokens: x.estimate}
	onErr := limits.FailOpen
	if !h.cfg.General.RateLimitsFailOpen {
		onErr = limits.FailClosed
	}
	if !x.admitted && p != nil {
		// A membership or an end user has rpm/tpm or max parallel
		// requests of its own only through a linked budget (keys.Linked)
		// or /customer's rpm_limit and tpm_limit.
		for r := range p.records { // plan.go
			var err error
			if req.Scopes, err = x.scope(req.Scopes, r, onErr); err != nil {
				return aborted(err)
			}
		}
		// model_rpm_limit / model_tpm_limit on the model requested (after
		// aliases), counted once per request like the record's own: a
		// key's, and a team's (LiteLLM keeps those in its metadata).
		for r := range p.records {
			if kind := recordKinds[r.Kind].modelLimit; kind != "" {
				req.Scopes = x.modelScope(req.Scopes, kind, r.ID(), r.Settings, onErr)
			}
		}
	}
	d := a.Deployment
	if d.RPM > 0 || d.TPM > 0 || d.MaxParallel != nil {
		sc := limits.Scope{Kind: limits.KindDeployment, ID: d.ID, RPM: d.RPM, TPM: d.TPM, Shards: limits.ShardsFor(d.RPM), OnError: onErr}
		if d.MaxParallel != nil {
			if *d.MaxParallel == 0 {
				x.c.Refused = string(limits.KindDeployment)
				return router.Outcome{}, apierr.New(apierr.RateLimited, "deployment %s is at its max_parallel_requests limit of 0", d.ID)
			}
			sc.Parallel = *d.MaxParallel
		}
		req.Scopes = append(req.Scopes, sc)
	}
	for _, sc := range req.Scopes {
		if sc.Parallel > 0 { // a lease per attempt, given back after the response (releaseLeases)
			req.Lease, req.LeaseExpires = x.c.CallID+"."+strconv.Itoa(a.Number), x.leaseExpiry(ctx, req.Now)
			break
		}
	}
	if x.hold != nil {
		if !x.admitted {
			req.Hold = x.hold
		} else if x.c.CostNanos > 0 {
			// The reservation covers one billed attempt's worst case: once
			// an attempt was billed, another might not fit in what is left.
			return aborted(apierr.New(apierr.BudgetExceeded, "strict_budgets: an earlier attempt of this request was billed $%s of its $%s reservation; another attempt is not made",
				keys.DecimalUSD(x.c.CostNanos), keys.DecimalUSD(x.hold.Amount)))
		}
	}
	if len(req.Scopes) == 0 && req.Hold == nil {
		x.admitted = true
		return router.Outcome{}, nil
	}
	dec, err := h.limits.Admit(ctx, req)
	if err != nil {
		if req.Hold != nil && !errors.Is(err, limits.ErrInvalid) {
			// The store did not answer, but the write may have been
			// applied (an answer lost or late, a deadline): the spend
			// event names the hold it tried, and settlement releases it
			// if it exists (a hold never written is a no-op there).
			x.c.Hold = req.Hold
		}
		if errors.Is(err, limits.ErrUnavailable) {
			return aborted(&apierr.Error{Kind: apierr.Unavailable, Message: "could not check limits and budgets; try again", Cause: err})
		}
		return aborted(&apierr.Error{Kind: apierr.Internal, Message: "internal error", Cause: err})
	}
	if dec.FailedOpen {
		h.metrics.FailOpen()
		h.log.LogAttrs(ctx, slog.LevelWarn, "limits failed open", slog.String("call_id", x.c.CallID))
	}
	if !dec.Allowed {
		return x.rejected(dec)
	}
	x.admitted = true
	if req.Hold != nil {
		x.c.Hold = req.Hold
	}
	if len(dec.Admission.Slots) > 0 {
		x.admissions = append(x.admissions, dec.Admission)
	}
	if len(dec.Admission.Leased) > 0 {
		x.leases = append(x.leases, dec.Admission)
	}
	return router.Outcome{}, nil
}

// aborted is the outcome of an attempt whose failure is the request's own:
// the router stops at once, with no retry, fallback or cooldown.
func aborted(err error) (router.Outcome, error) { return router.Outcome{Abort: true}, err }

// rejected maps a refused admission to the client's error. A deployment at
// its own limit is another deployment's chance; the key's or team's own
// limit ends the request.
func (x *exchange) rejected(dec limits.Decision) (router.Outcome, error) {
	switch dec.Reason {
	case limits.ReasonParallel:
		s := dec.BlockedScope
		x.c.Refused = string(s.Kind)
		if s.Kind == limits.KindDeployment {
			return router.Outcome{}, apierr.New(apierr.RateLimited, "deployment %s is at its max_parallel_requests limit of %d", s.ID, s.Parallel)
		}
		return aborted(parallelError(s, s.Parallel))
	case limits.ReasonRPM, limits.ReasonTPM:
		s := dec.BlockedScope
		x.c.Refused = string(s.Kind)
		if s.Kind == limits.KindDeployment {
			e := apierr.New(apierr.RateLimited, "deployment %s is at its %s limit", s.ID, dec.Reason)
			e.RetryAfter = dec.RetryAfter
			return router.Outcome{}, e
		}
		limit := s.RPM
		if dec.Reason == limits.ReasonTPM {
			limit = s.TPM
		}
		e := apierr.New(apierr.RateLimited, "%s", apierr.Detail(apierr.MsgRateLimit, "Hit limit for %s: %s limit of %d per minute reached", scopeName(s.Kind), dec.Reason, limit))
		if s.Kind == limits.KindKeyModel || s.Kind == limits.KindTeamModel {
			who := "key"
			if s.Kind == limits.KindTeamModel {
				who = "team"
			}
			// The model follows the first "#": a key hash or a team id has
			// none (keys.ValidID), a model name may.
			_, model, _ := strings.Cut(s.ID, "#")
			e = apierr.New(apierr.RateLimited, "%s", apierr.Detail(apierr.MsgRateLimit, "Hit limit for %s: model_%s_limit of %d per minute for model %s reached", who, dec.Reason, limit, model))
		}
		e.RetryAfter = dec.RetryAfter
		return aborted(e)
	}
	if dec.Reason == limits.ReasonBudget && dec.BlockedBudget != nil && x.hold != nil {
		x.c.Refused = budgetScope(dec.BlockedBudget.Kind)
		return aborted(holdError(x.hold, dec.BlockedBudget, dec.Committed))
	}
	// Only scope reasons can come back here.
	return aborted(apierr.New(apierr.Forbidden, "refused by limits: %s", dec.Reason))
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
	case limits.KindMember:
		return "team member"
	case limits.KindOrg:
		return "organization"
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
	for k, rk := range recordKinds { // plan.go
		if string(rk.store) == kind {
			return recordKind(k).Scope()
		}
	}
	return kind
}

// parallelError is the client's 429 for a key, team or user at its
// max_parallel_requests (LiteLLM's message).
func parallelError(s limits.Scope, limit int64) error {
	return apierr.New(apierr.RateLimited, "Max parallel request limit reached. Hit limit for %s: max_parallel_requests of %d", scopeName(s.Kind), limit)
}

// leaseExpiry is when the leases of an attempt made at now stop counting
// if they are never released (an instance that crashed): the request's
// deadline, else the router's timeout, plus limits.LeaseGrace.
func (x *exchange) leaseExpiry(ctx context.Context, now time.Time) time.Time {
	return now.Add(max(x.h.remaining(ctx, now), 0) + limits.LeaseGrace) // plan.go
}

// releaseLeases gives back the request's parallel-request leases, once it
// ended (one write per leased scope; a failure leaves the lease to expire).
func (x *exchange) releaseLeases(ctx context.Context) {
	for _, adm := range x.leases {
		if err := x.h.limits.Release(ctx, adm); err != nil {
			x.h.log.LogAttrs(ctx, slog.LevelWarn, "parallel-request lease release failed", slog.String("call_id", x.c.CallID), slog.String("error", err.Error()))
		}
	}
	x.leases = nil
}

// modelScope adds the scope of s's per-model limits on the model
// requested, if any (id: the record's id "#" the model).
func (x *exchange) modelScope(scopes []limits.Scope, kind limits.Kind, id string, s *keys.Settings, onErr limits.FailMode) []limits.Scope {
	if len(s.ModelRPM) == 0 && len(s.ModelTPM) == 0 {
		return scopes
	}
	rpm, tpm := s.ModelRPM[x.req.Model], s.ModelTPM[x.req.Model]
	if rpm <= 0 && tpm <= 0 {
		return scopes
	}
	return append(scopes, limits.Scope{Kind: kind, ID: id + "#" + x.req.Model, RPM: rpm, TPM: tpm, Shards: limits.ShardsFor(rpm), OnError: onErr})
}

// scope adds the scope of a record with limits to scopes; a
// max_parallel_requests of 0 refuses the request (LiteLLM: no request at
// all).
func (x *exchange) scope(scopes []limits.Scope, r record, onErr limits.FailMode) ([]limits.Scope, error) {
	s := r.Settings
	if s.RPMLimit == 0 && s.TPMLimit == 0 && s.MaxParallel == nil {
		return scopes, nil
	}
	kind := recordKinds[r.Kind].limit
	sc := limits.Scope{Kind: kind, ID: r.ID(), RPM: s.RPMLimit, TPM: s.TPMLimit, Shards: limits.ShardsFor(s.RPMLimit), OnError: onErr}
	if s.MaxParallel != nil {
		if *s.MaxParallel == 0 {
			x.c.Refused = string(kind)
			return scopes, parallelError(sc, 0)
		}
		sc.Parallel = *s.MaxParallel
	}
	return append(scopes, sc), nil
}
