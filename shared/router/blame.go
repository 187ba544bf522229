package router

import (
	"context"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

// Whose fault a failed attempt is decides what it does beyond its own
// request. Every failure counts for that request's retries and fallbacks;
// only a failure of the deployment counts towards its cooldown
// (allowed_fails, the shared cooldown store) and its measured latency,
// which steer every other request. A failure the request brought about
// itself (its content, the route or wildcard model it chose, a timeout
// shorter than the deployment's, its client going away) never does: one
// caller could otherwise take a deployment away from everyone
// (docs/routing.md, "What cools a deployment").

// blame is who a failure of a class is held against, before the request's
// part is looked at.
type blame uint8

const (
	// request: the request's own doing, whichever deployment it went to.
	request blame = iota
	// deployment: the deployment's fault (or its provider's).
	deployment
	// deploymentUnlessOwnBound: the deployment's, unless the bound that
	// ran out was the request's own timeout, shorter than the
	// deployment's (ownTimeout).
	deploymentUnlessOwnBound
)

// blames is the policy, by class. A class it does not list is never held
// against a deployment: the gateway's own refusals (bad parameters, a
// key's or a deployment's limits, budgets) say nothing of its health.
var blames = map[apierr.Kind]blame{
	apierr.UpstreamRateLimited: deployment,
	apierr.UpstreamConnection:  deployment,
	apierr.UpstreamServer:      deployment,
	apierr.UpstreamAuth:        deployment, // the deployment's key
	// A 404 is the deployment's (a wrong model name or api_base), unless
	// the request chose what is missing: the providers mark that
	// (apierr.Error.Own), as they know the route the call took.
	apierr.UpstreamNotFound: deployment,
	apierr.StreamBroken:     deployment,
	apierr.UpstreamTimeout:  deploymentUnlessOwnBound,
	// 400, 413, 422 and their words: the request fails the same anywhere.
	apierr.UpstreamBadRequest:    request,
	apierr.ContextWindowExceeded: request,
	apierr.ContentPolicy:         request,
}

// requestsOwn reports whether the failure e of attempt a (which reported
// out) was the request's own doing: asked for (mock_testing_*), ended by
// the request (a key's limit or budget), marked so by the provider
// classification, past the request's deadline or its client gone, of a
// class blames holds against the request, or a timeout of the request's
// own shorter bound.
func (s *state) requestsOwn(ctx context.Context, a *Attempt, e *apierr.Error, out Outcome) bool {
	if out.Abort || out.Simulated || e.Own || ctx.Err() != nil {
		return true
	}
	switch blames[e.Kind] {
	case deployment:
		return false
	case deploymentUnlessOwnBound:
		return s.ownTimeout(a.Deployment)
	}
	return true
}

// ownTimeout reports whether the request bounded its attempts at d by a
// timeout of its own (timeout, request_timeout, x-litellm-timeout; for a
// stream's first chunk stream_timeout first) shorter than d's own, or d
// has none.
func (s *state) ownTimeout(d *config.Deployment) bool {
	own, ownFirst := s.r.deploymentTimeouts(d)
	req := s.req.Timeout
	if s.req.Stream {
		own, req = ownFirst, firstPositive(s.req.StreamTimeout, s.req.Timeout)
	}
	return req > 0 && (own == 0 || req < own)
}

// deploymentTimeouts are d's own bounds, which a request's timeout
// replaces: one attempt's (its timeout, else the router's), and a stream's
// first chunk's (its stream_timeout, the router's, else the attempt's).
// Zero: none.
func (r *Router) deploymentTimeouts(d *config.Deployment) (attempt, firstChunk time.Duration) {
	attempt = firstPositive(d.Timeout, r.rs.AttemptTimeout)
	return attempt, firstPositive(d.StreamTimeout, r.rs.StreamTimeout, attempt)
}
