package gateway

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
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
// body's length in bytes plus PromptSlack tokens (a token is at least one
// byte of text; the upstream body differs from the client's by the model
// name and the gateway's own fields); the output's is max_tokens (or
// max_completion_tokens) times n, or, when the client sends neither, the
// largest output cap (max_output_tokens) of those deployments. A group with
// a deployment without a price, or without an output cap when the client
// sends no max_tokens, is refused with a 400 rather than guessed.
//
// The reservation covers one billed attempt: a retry or fallback after an
// attempt the provider billed is not made under a strict budget (failed
// attempts are almost never billed; unbilled retries go on as usual).

// PromptSlack is added to the body's byte length to bound its prompt tokens.
const PromptSlack = 256

// HoldGrace is how long a hold outlives its request (the request's
// deadline, else the router's timeout) before the sweeper may release it.
// It must cover the latest a spend event can still arrive in the normal
// course: once released, the event's cost lands on top of what was
// admitted since in the reservation's room. The spend queue (template.yaml)
// hands a failed batch back after its visibility timeout, 180 s, for up to
// maxReceiveCount 5 receives, each handled within the spend function's 30 s
// timeout: about 15 minutes from the first receive, which follows the
// request by the 2 s batching window. 20 minutes covers that with room for
// a briefly throttled consumer. The price: a request that crashed before
// sending its event keeps its reservation that long. An event that comes
// later still (a backlog of more than HoldGrace, a replay from the
// dead-letter queue) is counted in full on top (README, strict budgets).
const HoldGrace = 20 * time.Minute

// reservePrice is the worst-case price of a set of deployments.
type reservePrice struct {
	input, output float64 // USD per token: the highest over the deployments
	maxOut        int64   // the highest output cap
	noCap         string  // a deployment with no output cap, if any
	unpriced      string  // a deployment with no price, if any
}

func (r *reservePrice) join(o reservePrice) {
	r.input, r.output, r.maxOut = max(r.input, o.input), max(r.output, o.output), max(r.maxOut, o.maxOut)
	if r.noCap == "" {
		r.noCap = o.noCap
	}
	if r.unpriced == "" {
		r.unpriced = o.unpriced
	}
}

// strictPrices computes every group's reservation price (its own
// deployments and the groups its fallbacks reach).
func (h *Handler) strictPrices() map[string]reservePrice {
	own := map[string]reservePrice{}
	for _, d := range h.cfg.Deployments {
		if !d.Implemented {
			continue
		}
		rp := own[d.ModelName]
		var dp reservePrice
		if p := d.Price; p != nil && d.Model != "*" {
			dp.input = max(p.Input, p.CacheRead, p.CacheWrite)
			dp.output = p.Output
		} else {
			dp.unpriced = d.ID
		}
		if d.MaxOutputTokens > 0 {
			dp.maxOut = int64(d.MaxOutputTokens)
		} else {
			dp.noCap = d.ID
		}
		rp.join(dp)
		own[d.ModelName] = rp
	}
	rs := &h.cfg.Router
	out := make(map[string]reservePrice, len(own))
	for g := range own {
		seen := map[string]bool{g: true}
		queue := []string{g}
		rp := reservePrice{}
		for len(queue) > 0 {
			name := queue[0]
			queue = queue[1:]
			rp.join(own[name])
			var next []string
			for _, fbs := range [][]config.Fallback{rs.Fallbacks, rs.ContextWindowFallbacks, rs.ContentPolicyFallbacks} {
				next = append(next, config.FallbacksFor(fbs, name)...)
			}
			next = append(next, rs.DefaultFallbacks...)
			for _, m := range next {
				if fg, err := h.router.Group(m); err == nil && !seen[fg] {
					seen[fg] = true
					queue = append(queue, fg)
				}
			}
		}
		out[g] = rp
	}
	return out
}

// reserve returns the hold of a request some budget applies to under strict
// budgets (nil when none applies), or the client's error.
func (h *Handler) reserve(ctx context.Context, p *Principal, req *wire.Request, op wire.Op, callID string) (*limits.Hold, error) {
	if p == nil {
		return nil, nil
	}
	now := h.now()
	var budgets []limits.BudgetCounter
	add := func(kind keys.Kind, id string, b keys.Budget) {
		if b.MaxBudget == nil {
			return
		}
		budgets = append(budgets, limits.BudgetCounter{
			Kind: string(kind), ID: id, Period: keys.PeriodStart(b.Duration, now), End: b.ResetAt(now),
			Base: keys.Nanos(b.Current(now)), Max: keys.Nanos(*b.MaxBudget),
		})
	}
	if k := p.Key; k != nil {
		add(keys.KindKey, k.Hash, k.Budget)
	}
	if t := p.Team; t != nil {
		add(keys.KindTeam, t.ID, t.Budget)
	}
	if u := p.User; u != nil {
		add(keys.KindUser, u.ID, u.Budget)
	}
	if m := p.Member; m != nil {
		add(keys.KindMember, keys.MemberID(m.TeamID, m.UserID), m.Budget)
	}
	if e := p.EndUser; e != nil {
		add(keys.KindEndUser, e.ID, e.Budget)
	}
	if len(budgets) == 0 {
		return nil, nil
	}
	group, err := h.router.Group(req.Model)
	if err != nil {
		return nil, err
	}
	rp := h.strict[group]
	if req.FallbacksSet && !req.NoFallbacks {
		for _, m := range req.Fallbacks {
			if fg, err := h.router.Group(m); err == nil {
				rp.join(h.strict[fg])
			}
		}
	}
	if rp.unpriced != "" {
		return nil, apierr.New(apierr.InvalidRequest,
			"strict_budgets: model %q may be served by deployment %s, which has no price, so its worst-case cost cannot be reserved; set its input_cost_per_token and output_cost_per_token (or model_info.base_model)",
			req.Model, rp.unpriced)
	}
	out := int64(0)
	if op != wire.OpEmbeddings {
		out = req.MaxTokens
		if out <= 0 {
			if rp.noCap != "" {
				e := apierr.New(apierr.InvalidRequest,
					"strict_budgets: this request has a budget and no max_tokens, and deployment %s has no known output limit; set max_tokens (or max_completion_tokens) so that its worst-case cost can be reserved",
					rp.noCap)
				e.Param = "max_tokens"
				return nil, e
			}
			out = rp.maxOut
		}
		if n := gjson.GetBytes(req.Body, "n").Int(); n > 1 {
			out *= n
		}
	}
	usd := float64(int64(len(req.Body))+PromptSlack)*rp.input + float64(out)*rp.output
	amount := int64(math.Ceil(usd*keys.NanosPerUSD)) + 1
	if usd*keys.NanosPerUSD >= math.MaxInt64/2 {
		amount = math.MaxInt64 / 2
	}
	timeout := h.cfg.Router.Timeout
	if timeout <= 0 {
		timeout = config.DefaultTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = dl.Sub(now)
	}
	return &limits.Hold{
		ID: callID, Amount: amount, Budgets: budgets,
		Expires: now.Add(max(timeout, 0) + HoldGrace),
	}, nil
}

// holdError is the client's error for a hold refused by budget b.
func holdError(h *limits.Hold, b *limits.BudgetCounter, committed int64) error {
	what := b.Kind
	switch keys.Kind(b.Kind) {
	case keys.KindKey:
		what = "key"
	case keys.KindEndUser:
		what = "end user " + b.ID
	case keys.KindMember:
		what = "team member " + b.ID
	default:
		what = b.Kind + " " + b.ID
	}
	msg := fmt.Sprintf("Budget has been exceeded: %s has spent or reserved $%s of its max_budget of $%s, and this request's worst-case cost is $%s (strict_budgets: lower max_tokens to reserve less)",
		what, keys.DecimalUSD(committed), keys.DecimalUSD(b.Max), keys.DecimalUSD(h.Amount))
	if !b.End.IsZero() {
		msg += fmt.Sprintf("; the budget resets at %s", b.End.Format(time.RFC3339))
	}
	return apierr.New(apierr.BudgetExceeded, "%s", msg)
}
