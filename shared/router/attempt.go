package router

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
)

// Attempt is one try at one deployment, as the router decided it. The
// attempt function reads it and never writes it: what became of the try
// comes back as its Outcome.
type Attempt struct {
	Alias         string // the model the client asked for
	Group         string // the model group tried
	Deployment    *config.Deployment
	ProviderModel string // the provider's model name for this attempt
	Number        int    // 1-based across the whole request
	Retry         int    // retries so far in this group
	Retries       int    // retries so far in the whole request (x-litellm-attempted-retries)
	Fallback      int    // fallbacks taken so far (0 = the requested group)
	// MaxRetries is the retries this attempt's group allows (the request's
	// num_retries, else the deployment's, else the router's; the retry
	// policies aside): LiteLLM's x-litellm-max-retries.
	MaxRetries int
	// Own is 1 + the index of the request's own fallback this attempt
	// serves (its "fallbacks" entry, which may carry overrides); 0 when
	// it serves the requested model or a configured fallback.
	Own int
	// Timeout bounds a non-streamed attempt; StreamTimeout bounds the wait
	// for a stream's first chunk (stream_timeout, else timeout). Zero: no
	// bound beyond the request's.
	Timeout       time.Duration
	StreamTimeout time.Duration
}

// Outcome is what an attempt function reports of its attempt besides its
// error. The zero Outcome is a plain try: on failure the router may retry,
// fall back and count the failure towards the deployment's cooldown.
type Outcome struct {
	// Committed: output reached the client, so the router neither retries
	// nor falls back (a stream is committed by its first content event).
	Committed bool
	// Abort: the failure is the request's own (its key over a limit or
	// budget), so the router stops at once, with no retry, no fallback
	// and no cooldown.
	Abort bool
	// Tokens, when known, are the completion tokens the attempt used; they
	// feed usage strategies.
	Tokens int64
	// Simulated: the failure was asked for by the request (LiteLLM's
	// mock_testing_* switches), not the deployment's: it is retried and
	// falls back as named, but never cools the deployment down.
	Simulated bool
}

// AttemptFunc makes one attempt. It returns nil on success, or the failure as
// an *apierr.Error of an upstream kind, and in both cases the attempt's
// Outcome.
type AttemptFunc func(ctx context.Context, a *Attempt) (Outcome, error)

// attempt runs one try, records it and its outcome, and counts a failure
// of the deployment (not the request's own: blame.go) towards cooldown.
func (s *state) attempt(ctx context.Context, g *group, model string, n *node, retry, fallback int) error {
	r := s.r
	s.number++
	d := n.d
	a := &Attempt{
		Alias: s.req.Model, Group: g.name, Deployment: d, ProviderModel: providerModel(d, model),
		Number: s.number, Retry: retry, Retries: s.res.Retries, Fallback: fallback,
		MaxRetries: s.maxRetries(d), Own: s.own,
	}
	timeout, firstChunk := r.deploymentTimeouts(d) // blame.go; the request's own replace them
	a.Timeout = firstPositive(s.req.Timeout, timeout)
	a.StreamTimeout = firstPositive(s.req.StreamTimeout, s.req.Timeout, firstChunk)
	s.res.Final = a
	start := r.now()
	n.inflight.Add(1)
	out, err := s.fn(ctx, a)
	n.inflight.Add(-1)
	s.ended = out.Committed || out.Abort
	end := r.now()
	lat := end.Sub(start)
	n.addUsage(end, 1, out.Tokens+int64(s.req.PromptTokens))
	rec := Record{Group: g.name, Deployment: d.ID, Latency: lat}
	level, outcome := slog.LevelInfo, "success"
	var e *apierr.Error
	own := false // the failure was the request's own doing (blame.go)
	if err != nil {
		e = apierr.From(err)
		rec.Class = e.Kind.String()
		level, outcome = slog.LevelWarn, "failure"
		if errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled {
			outcome = "cancelled"
		}
		if own = s.requestsOwn(ctx, a, e, out); !own && e.Kind == apierr.UpstreamTimeout {
			// A timeout is a (lower bound of a) latency: without it a
			// deployment that always times out stays "never measured"
			// and keeps winning latency-based routing. Not the request's
			// own shorter timeout: that measures the request.
			n.observeLatency(lat)
		}
	} else {
		n.observeLatency(lat)
	}
	s.res.Trace = append(s.res.Trace, rec)
	r.log.LogAttrs(ctx, level, "attempt",
		slog.String("call_id", s.req.CallID), slog.String("alias", a.Alias), slog.String("group", g.name),
		slog.String("deployment", d.ID), slog.String("provider_model", n.label(a.ProviderModel)),
		slog.Int("attempt", a.Number), slog.String("outcome", outcome), slog.String("error_class", rec.Class),
		slog.Duration("latency", lat))
	if err != nil && !own {
		if until := r.recordFailure(ctx, d, e, end); e.Kind == apierr.UpstreamRateLimited && e.RetryAfter <= 0 && until.After(end) {
			e.RetryAfter = until.Sub(end) // a 429 without a hint: retry when the cooldown ends
		}
	}
	return err
}

func (r *Router) recordFailure(ctx context.Context, d *config.Deployment, e *apierr.Error, at time.Time) time.Time {
	k := e.Kind
	if r.rs.DisableCooldowns || r.rs.CooldownTime <= 0 {
		return time.Time{}
	}
	class := k.String()
	// allowed_fails counts every failure of the deployment in the window,
	// whatever its class (as LiteLLM counts failed calls per deployment), so
	// those failures share one bucket; allowed_fails_policy gives a class its
	// own bucket and budget.
	bucket := class
	allowed, hasPolicy := r.rs.AllowedFailsPolicy[class]
	if !hasPolicy {
		allowed, bucket = r.rs.AllowedFails, anyClass
	}
	f := cooldown.Failure{
		Deployment: d.ID, Class: bucket, At: at, Allowed: allowed,
		Immediate: k == apierr.UpstreamRateLimited && !hasPolicy,
		Window:    time.Minute, Cooldown: r.rs.CooldownTime,
	}
	until, err := r.cooldowns.RecordFailure(ctx, f)
	if err != nil {
		r.log.LogAttrs(ctx, slog.LevelWarn, "cooldown write failed", slog.String("deployment", d.ID), slog.String("error", err.Error()))
		return time.Time{}
	}
	if !until.IsZero() {
		r.log.LogAttrs(ctx, slog.LevelWarn, "deployment cooling down", slog.String("deployment", d.ID),
			slog.String("error_class", class), slog.Time("until", until))
		if r.onCool != nil && until.Equal(cooldown.Until(f)) { // this failure started (or extended) it
			r.onCool(d.ModelName, d.ID, e.HTTPStatus(), until)
		}
	}
	return until
}

// providerModel is the provider's model name for an attempt; a wildcard
// deployment ("openai/*") takes the model being tried (the client's, or a
// fallback's).
func providerModel(d *config.Deployment, model string) string {
	if d.Model != "*" {
		return d.Model
	}
	if p, m, ok := strings.Cut(model, "/"); ok && (p == d.Provider || d.AnyProvider && d.ForModel(model, nil).Provider == p) {
		return m
	}
	return model
}

func firstPositive(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}
