package gateway

import (
	"context"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Strict budgets for media calls: the reservation is the request's own
// worst case at media prices, the highest over every deployment the
// request may reach (its group, its own fallbacks and the configured ones):
// n images of the size and quality asked, or the characters of a speech
// input. Moderations cost nothing and reserve nothing. A transcription's
// cost (per second of audio) is not known before the call, and a deployment
// without a media price cannot be bounded: both are refused with a 400
// rather than guessed, as chat refuses an unpriced deployment.
func (h *Handler) reserveMedia(ctx context.Context, req *wire.Request, pl *plan, a *api, group string, budgets []limits.BudgetCounter, callID string, now time.Time) (*limits.Hold, error) {
	switch {
	case a.free:
		return nil, nil
	case a.unreservable != "" || a.worstCase == nil:
		return nil, apierr.New(apierr.InvalidRequest, "%s", a.unreservable)
	}
	// Every group the request's group and its own fallbacks reach, each
	// once, in the order reached (plan.go).
	groups := slices.Clone(h.reachOf(group))
	pl.reach(req, func(fg string) {
		for _, g := range h.reachOf(fg) {
			if !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	})
	var amount int64
	for _, g := range groups {
		for _, d := range h.router.Deployments(g) {
			cost, ok := a.worstCase(d, req)
			if !ok {
				return nil, apierr.New(apierr.InvalidRequest,
					"strict_budgets: model %q may be served by deployment %s, which has no %s price, so its worst-case cost cannot be reserved", req.Model, d.ID, a.op)
			}
			amount = max(amount, cost)
		}
	}
	return &limits.Hold{ID: callID, Amount: max(amount, 1), Budgets: budgets, Expires: limits.HoldExpiry(now, h.remaining(ctx, now))}, nil
}

// imagesWorstCase is the most an images request can cost on deployment d:
// n images of the size and quality asked.
func imagesWorstCase(d *config.Deployment, req *wire.Request) (int64, bool) {
	size, quality := gjson.GetBytes(req.Body, "size").Str, gjson.GetBytes(req.Body, "quality").Str
	for _, name := range [...]string{d.BaseModel, d.Model} {
		if cost, ok := pricing.DefaultMedia().ImageCostNanos(name, size, quality, max(req.N, 1)); name != "" && ok {
			return cost, true
		}
	}
	return 0, false
}

// speechWorstCase is the most a speech request can cost on deployment d:
// the characters of its input.
func speechWorstCase(d *config.Deployment, req *wire.Request) (int64, bool) {
	for _, name := range [...]string{d.BaseModel, d.Model} {
		if m, ok := pricing.DefaultMedia().Lookup(name); name != "" && ok && m.PerCharacter > 0 {
			return pricing.NanosOf(m.PerCharacter, float64(utf8.RuneCountInString(gjson.GetBytes(req.Body, "input").Str))), true
		}
	}
	return 0, false
}
