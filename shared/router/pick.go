package router

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// pick filters the group's candidates and asks the strategy for one.
func (s *state) pick(ctx context.Context, g *group, now time.Time, failed map[*node]error) (*node, error) {
	r := s.r
	cands := filter(g.nodes, func(n *node) bool { return !n.d.Blocked })
	if len(cands) == 0 {
		return nil, apierr.New(apierr.RateLimited, "every deployment of model group %q is blocked", g.name)
	}
	if s.req.Region != "" {
		if cands = filter(cands, func(n *node) bool { return n.d.Region == s.req.Region }); len(cands) == 0 {
			e := apierr.New(apierr.RateLimited, "No deployments available for selected model: no deployment of model group %q is in allowed_model_region %q", g.name, s.req.Region)
			e.Code = "no_deployments_available"
			return nil, e
		}
	}
	if s.req.Deployment != "" {
		if pinned := filter(cands, func(n *node) bool { return n.d.ID == s.req.Deployment }); len(pinned) > 0 {
			cands = pinned
		}
	}
	// Tags (enable_tag_filtering): deployments serving one of the request's
	// tags, else those tagged "default".
	if r.rs.EnableTagFiltering && len(s.req.Tags) > 0 {
		tagged := filter(cands, func(n *node) bool { return hasAny(n.d.Tags, s.req.Tags) })
		if len(tagged) == 0 {
			tagged = filter(cands, func(n *node) bool { return hasAny(n.d.Tags, []string{"default"}) })
		}
		if len(tagged) == 0 {
			e := apierr.New(apierr.InvalidRequest, "no deployment of model group %q serves tags %v", g.name, s.req.Tags)
			e.Param = "tags"
			return nil, e
		}
		cands = tagged
	}
	// Context window (pre-call checks).
	if r.rs.EnablePreCallChecks && s.need > 0 {
		fits := filter(cands, func(n *node) bool { return n.d.MaxInputTokens == 0 || s.need <= n.d.MaxInputTokens })
		if len(fits) == 0 {
			return nil, apierr.New(apierr.ContextWindowExceeded, "the request (about %d tokens) exceeds the context window of every deployment of model group %q", s.need, g.name)
		}
		cands = fits
	}
	// Cooldowns.
	if !r.rs.DisableCooldowns {
		ids := g.ids
		if len(cands) != len(g.nodes) {
			ids = make([]string, len(cands))
			for i, n := range cands {
				ids[i] = n.d.ID
			}
		}
		cooling, err := r.cooldowns.CoolingDown(ctx, ids, now)
		if err != nil { // fail open: routing without cooldown data beats refusing
			r.log.LogAttrs(ctx, slog.LevelWarn, "cooldown read failed; routing without it", slog.String("error", err.Error()))
		} else if len(cooling) > 0 {
			warm := filter(cands, func(n *node) bool { _, c := cooling[n.d.ID]; return !c })
			if len(warm) == 0 {
				var earliest time.Time
				for _, until := range cooling {
					if earliest.IsZero() || until.Before(earliest) {
						earliest = until
					}
				}
				e := apierr.New(apierr.RateLimited, "every deployment of model group %q is cooling down after failures; retry after %s", g.name, earliest.UTC().Format(time.RFC3339))
				e.RetryAfter = earliest.Sub(now)
				e.Code = "no_deployments_available"
				return nil, e
			}
			cands = warm
		}
	}
	// Own RPM/TPM limits (this instance's view).
	if limited := filter(cands, func(n *node) bool {
		reqs, toks := n.usage(now)
		return (n.d.RPM == 0 || reqs < n.d.RPM) && (n.d.TPM == 0 || toks < n.d.TPM)
	}); len(limited) > 0 {
		cands = limited
	} else {
		e := apierr.New(apierr.RateLimited, "every deployment of model group %q is at its rpm/tpm limit", g.name)
		e.Cause = ErrDeploymentLimits
		e.RetryAfter = time.Duration(60-now.Unix()%60) * time.Second
		return nil, e
	}
	// Deployments that already failed for this request, while others remain.
	if len(failed) > 0 {
		if fresh := filter(cands, func(n *node) bool { _, f := failed[n]; return !f }); len(fresh) > 0 {
			cands = fresh
		}
	}
	// Lowest order tier.
	minOrder := 0
	for _, n := range cands {
		if n.d.Order > 0 && (minOrder == 0 || n.d.Order < minOrder) {
			minOrder = n.d.Order
		}
	}
	if minOrder > 0 {
		cands = filter(cands, func(n *node) bool { return n.d.Order == minOrder })
	}
	return r.selector.Select(cands, now, r.rand), nil
}

// filter returns the nodes keep accepts. It returns in itself, without
// allocating, when it keeps them all (the common case); in is never changed.
func filter(in []*node, keep func(*node) bool) []*node {
	for i, n := range in {
		if keep(n) {
			continue
		}
		out := make([]*node, i, len(in)-1)
		copy(out, in[:i])
		for _, m := range in[i+1:] {
			if keep(m) {
				out = append(out, m)
			}
		}
		return out
	}
	return in
}

func hasAny(have, want []string) bool {
	for _, w := range want {
		for _, h := range have {
			if h == w {
				return true
			}
		}
	}
	return false
}
