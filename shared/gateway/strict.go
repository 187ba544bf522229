package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Strict budgets (general_settings.strict_budgets): a request that a budget
// applies to reserves its worst-case cost with its first admission (see
// limits.Hold), before the upstream call, and its spend event settles it.
//
// The worst case is priced for every deployment the request may reach: the
// highest input price (cache prices included) and the highest output price
// over its model group and every group its configured fallbacks
// (fallbacks, context_window_fallbacks, content_policy_fallbacks,
// default_fallbacks, transitively) and its own "fallbacks" lead to,
// computed once at startup per group. The prompt's upper bound is the
// body's length in bytes plus limits.PromptSlack tokens (a token is at least one
// byte of text; the upstream body differs from the client's by the model
// name and the gateway's own fields); the output's is max_tokens (or
// max_completion_tokens) times n, or, when the client sends neither, the
// largest output cap (max_output_tokens) of those deployments. A max_tokens
// above that cap is clamped to it when every deployment has one
// (limits.Price.OutputTokens says why clamp rather than refuse), and the
// product saturates rather than wraps. A group with
// a deployment without a price, or without an output cap when the client
// sends no max_tokens, is refused with a 400 rather than guessed.
//
// The reservation covers one billed attempt: a retry or fallback after an
// attempt the provider billed is not made under a strict budget (failed
// attempts are almost never billed; unbilled retries go on as usual).

// strictPrices computes every group's reservation price (its own
// deployments and the groups its fallbacks reach), and sets h.reach.
func (h *Handler) strictPrices() map[string]limits.Price {
	own := map[string]limits.Price{}
	for _, d := range h.cfg.Deployments {
		if !d.Implemented {
			continue
		}
		rp := own[d.ModelName]
		var dp limits.Price
		if p := d.Price; p != nil && d.Model != "*" {
			dp.Input = max(p.Input, p.CacheRead, p.CacheWrite)
			dp.Output = p.Output
		} else {
			dp.Unpriced = d.ID
		}
		if d.MaxOutputTokens > 0 {
			dp.MaxOutput = int64(d.MaxOutputTokens)
		} else {
			dp.NoCap = d.ID
		}
		rp.Join(dp)
		own[d.ModelName] = rp
	}
	out := make(map[string]limits.Price, len(own))
	h.reach = make(map[string][]string, len(own))
	for g := range own {
		rp := limits.Price{}
		h.reach[g] = h.configuredReach(g) // plan.go
		for _, fg := range h.reach[g] {
			rp.Join(own[fg])
		}
		out[g] = rp
	}
	return out
}

// reserve returns the hold of a request some budget applies to under strict
// budgets (nil when none applies), or the client's error.
func (h *Handler) reserve(ctx context.Context, p *Principal, req *wire.Request, pl *plan, a *api, callID string) (*limits.Hold, error) {
	if p == nil {
		return nil, nil
	}
	now := h.now()
	var budgets []limits.BudgetCounter
	for r := range p.records { // plan.go
		if b := r.Settings.Budget; b.MaxBudget != nil {
			budgets = append(budgets, limits.BudgetCounter{
				Kind: string(recordKinds[r.Kind].store), ID: r.ID(), Period: b.PeriodAt(now), End: b.ResetAt(now),
				Base: keys.Nanos(b.Current(now)), Max: keys.Nanos(*b.MaxBudget),
			})
		}
		if r.Kind == recKey && len(p.Key.ModelMaxBudget) > 0 {
			budgets = modelBudgetCounter(budgets, p.Key, req.Model, now)
		}
	}
	if len(budgets) == 0 {
		return nil, nil
	}
	if pl.err != nil {
		return nil, pl.err
	}
	group := pl.group()
	if a.media { // strict_media.go
		return h.reserveMedia(ctx, req, pl, a, group, budgets, callID, now)
	}
	rp := h.strict[group]
	pl.reach(req, func(fg string) { rp.Join(h.strict[fg]) })
	if rp.Unpriced != "" {
		return nil, apierr.New(apierr.InvalidRequest,
			"strict_budgets: model %q may be served by deployment %s, which has no price, so its worst-case cost cannot be reserved; set its input_cost_per_token and output_cost_per_token (or model_info.base_model)",
			req.Model, rp.Unpriced)
	}
	out := int64(0)
	if !a.noOutput {
		if req.MaxTokens <= 0 && rp.NoCap != "" {
			e := apierr.New(apierr.InvalidRequest,
				"strict_budgets: this request has a budget and no max_tokens, and deployment %s has no known output limit; set max_tokens (or max_completion_tokens) so that its worst-case cost can be reserved",
				rp.NoCap)
			e.Param = "max_tokens"
			return nil, e
		}
		out = rp.OutputTokens(req.MaxTokens, req.N) // clamped and saturated (limits/sat.go)
	}
	return &limits.Hold{
		ID: callID, Amount: rp.Reserve(int64(len(req.Body)), out), Budgets: budgets,
		Expires: limits.HoldExpiry(now, h.remaining(ctx, now)),
	}, nil
}

// holdError is the client's error for a hold refused by budget b.
func holdError(h *limits.Hold, b *limits.BudgetCounter, committed int64) error {
	what, limit := b.Kind, "max_budget"
	switch keys.Kind(b.Kind) {
	case keys.KindKey:
		what = "key"
	case keys.KindEndUser:
		what = "end user " + b.ID
	case keys.KindMember:
		what = "team member " + b.ID
	case keys.KindOrg:
		what = "organization " + b.ID
	case KindKeyModelBudget:
		_, model, _ := strings.Cut(b.ID, "#")
		what, limit = "The key's model "+model, "model_max_budget"
	default:
		what = b.Kind + " " + b.ID
	}
	msg := fmt.Sprintf("Budget has been exceeded! %s has spent or reserved $%s of its %s of $%s, and this request's worst-case cost is $%s (strict_budgets: lower max_tokens to reserve less)",
		what, keys.DecimalUSD(committed), limit, keys.DecimalUSD(b.Max), keys.DecimalUSD(h.Amount))
	if !b.End.IsZero() {
		msg += fmt.Sprintf("; the budget resets at %s", b.End.Format(time.RFC3339))
	}
	return apierr.New(apierr.BudgetExceeded, "%s", msg)
}
