package router

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

// withFallbacks walks the fallback chain of a failed group depth-first: each
// fallback group is tried with its own retries, then its own fallbacks; no
// group is visited twice and at most max_fallbacks groups are tried.
func (s *state) withFallbacks(ctx context.Context, g *group, model string, err error) error {
	orig := err
	var tried []string
	var walk func(g *group, model string, err error) error
	walk = func(g *group, model string, err error) error {
		names, own := s.fallbacksFor(g, model, err)
		for i, name := range names {
			if s.res.Fallbacks >= s.r.rs.MaxFallbacks || ctx.Err() != nil {
				return err
			}
			var fg *group
			var fname string
			if t := s.ownTarget(own, i); t.of(s.r) {
				fg, fname = t.g, t.name
			} else {
				fg, fname = s.r.lookup(name)
			}
			if fg == nil || slices.Contains(s.visited, fname) {
				continue
			}
			if s.req.Allowed != nil && s.refusedAccess(ctx, name, fg) {
				continue
			}
			// A configured fallback is tried (as in LiteLLM) unless the
			// pre-call count shows the prompt cannot fit its window.
			if s.r.rs.EnablePreCallChecks && s.need > 0 && fg.maxInput > 0 && s.need > fg.maxInput {
				s.r.log.LogAttrs(ctx, slog.LevelInfo, "fallback skipped: context window too small",
					slog.String("call_id", s.req.CallID), slog.String("group", fg.name),
					slog.Int("prompt_tokens", s.need), slog.Int("max_input_tokens", fg.maxInput))
				continue
			}
			s.res.Fallbacks++
			tried = append(tried, fname)
			if own {
				s.own = i + 1
			}
			ferr := s.tryGroup(ctx, fg, fname, s.res.Fallbacks)
			s.own = 0
			if ferr == nil {
				return nil
			}
			if s.ended {
				return ferr
			}
			werr := walk(fg, fname, ferr)
			if werr == nil {
				return nil
			}
			// A refusal ends the chain: going on to this group's next
			// general fallback would route around it (LiteLLM #40406).
			if s.ended || apierr.KindOf(werr) == apierr.ContentPolicy {
				return werr
			}
		}
		return err
	}
	if s.req.NoFallbacks || s.ended {
		return orig
	}
	if werr := walk(g, model, err); werr == nil {
		return nil
	} else if s.ended || werr != err {
		return werr // the stream broke, or a fallback refused the content
	}
	if len(tried) > 0 {
		e := *apierr.From(orig)
		e.Message = fmt.Sprintf("%s; fallbacks tried: %s", e.Message, strings.Join(tried, ", "))
		return &e
	}
	return orig
}

// ownTarget is the i-th of the request's own fallbacks as the caller
// resolved it (Request.FallbackTargets), when own says the list walked is
// the request's; the zero Target otherwise.
func (s *state) ownTarget(own bool, i int) Target {
	if own && i < len(s.req.FallbackTargets) {
		return s.req.FallbackTargets[i]
	}
	return Target{}
}

// fallbacksFor picks the fallback list for a failure of model (served by
// group g): the context-window list for context errors, the content-policy
// list for refusals (a refusal never takes the general list), else the
// request's own list (own), the configured list (exact or wildcard), or
// default_fallbacks.
func (s *state) fallbacksFor(g *group, model string, err error) (names []string, own bool) {
	rs := &s.r.rs
	// A model served by a wildcard group is looked up by its own name
	// first ("openai/gpt-4o"), then by the group's ("openai/*").
	lookup := func(fbs []config.Fallback) []string {
		if fb := config.FallbacksFor(fbs, model); fb != nil || model == g.name {
			return fb
		}
		return config.FallbacksFor(fbs, g.name)
	}
	k := apierr.KindOf(err)
	if s.refused && k != apierr.ContentPolicy {
		// The content was refused earlier in this request: only groups
		// named in content_policy_fallbacks may see it.
		return nil, false
	}
	switch k {
	case apierr.ContextWindowExceeded:
		if len(rs.ContextWindowFallbacks) > 0 {
			return lookup(rs.ContextWindowFallbacks), false
		}
	case apierr.ContentPolicy:
		return lookup(rs.ContentPolicyFallbacks), false
	case apierr.UpstreamBadRequest, apierr.InvalidRequest, apierr.NotImplemented, apierr.Internal:
		if k != apierr.NotImplemented {
			return nil, false // the same request fails anywhere
		}
	}
	if s.req.FallbacksSet && s.res.Fallbacks == 0 && model == s.first {
		return s.req.Fallbacks, true
	}
	if fb := lookup(rs.Fallbacks); fb != nil {
		return fb, false
	}
	if s.res.Fallbacks == 0 {
		return rs.DefaultFallbacks, false
	}
	return nil, false
}

// refusedAccess reports whether the request's principal may not use the
// fallback name (served by group fg): a fallback outside the key's, team's
// or user's models is skipped as if absent, so that a configured fallback
// never reaches a model the caller could not ask for (the per-request
// fallbacks are checked by the gateway before routing). The reason is
// logged and kept in the result, once per fallback.
func (s *state) refusedAccess(ctx context.Context, name string, fg *group) bool {
	err := s.req.Allowed(name, fg.name)
	if err == nil {
		return false
	}
	reason := apierr.From(err).Message
	s.r.log.LogAttrs(ctx, slog.LevelInfo, "fallback skipped: model not allowed",
		slog.String("call_id", s.req.CallID), slog.String("group", fg.name),
		slog.String("fallback", name), slog.String("reason", reason))
	entry := name + ": " + reason
	if !slices.Contains(s.res.Skipped, entry) {
		s.res.Skipped = append(s.res.Skipped, entry)
	}
	return true
}
