package router

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

// Request is what the router needs to know of a client's request.
type Request struct {
	Model        string // as the client sent it (alias, group or wildcard match)
	CallID       string
	PromptTokens int // estimate, for context-window checks and usage strategies
	Stream       bool
	Tags         []string
	Fallbacks    []string // per-request fallbacks (replace the configured general list)
	FallbacksSet bool
	NoFallbacks  bool // disable_fallbacks
	NumRetries   int  // per-request num_retries; negative: not set
	// Allowed, when not nil, says whether the request's principal may use
	// a fallback (its name as configured, and the group it resolves to):
	// a configured fallback it may not use is skipped, never called, and
	// logged with the error's message as the reason. Nil: every model.
	Allowed func(model, group string) error
	// Region, when set, is the only region whose deployments may serve
	// (the end user's allowed_model_region): every other deployment, in
	// the group and in its fallbacks, is filtered out as LiteLLM's
	// pre-call checks do.
	Region string
	// Deployment, when set, is the one deployment of a group that may serve
	// (the one holding a Responses conversation at its provider); a group
	// without it is served as usual.
	Deployment string
	// Timeout is the request's own timeout (body timeout or the
	// x-litellm-timeout header): it bounds each attempt, streamed or not,
	// in place of the deployment's timeout and stream_timeout. 0: not set.
	Timeout time.Duration
	// StreamTimeout is the request's own stream_timeout (body field or
	// x-litellm-stream-timeout): a stream's wait for its first chunk,
	// before Timeout. 0: not set.
	StreamTimeout time.Duration
	// Target is Model resolved (Router.Resolve), when the caller already
	// resolved it; zero: Do resolves Model. A Target whose resolution
	// failed fails the request with its error.
	Target Target
	// TargetErr is the error of Target's resolution, if it failed.
	TargetErr error
	// FallbackTargets are Fallbacks resolved (Router.Lookup), one per name
	// and in the same order, when the caller already resolved them; nil:
	// each is resolved when its turn comes.
	FallbackTargets []Target
}

// Record is one line of a request's trace.
type Record struct {
	Group      string
	Deployment string
	Class      string // "" on success
	Latency    time.Duration
}

// Result describes how a request was served.
type Result struct {
	Trace     []Record
	Final     *Attempt // the last attempt made (nil if none was)
	Retries   int      // retries across all groups
	Fallbacks int      // fallback groups tried
	// Skipped names the fallbacks Request.Allowed refused, each as
	// "<model>: <reason>" (nil when none was).
	Skipped []string
}

// ErrDeploymentLimits is the cause of the 429 the router returns when every
// deployment of a group is at its own rpm/tpm limit in this instance's
// count; callers tell that refusal from others with errors.Is.
var ErrDeploymentLimits = errors.New("deployment rpm/tpm limits")

// noRetry lists classes that another try cannot fix.
var noRetry = map[apierr.Kind]bool{
	apierr.UpstreamBadRequest:    true,
	apierr.ContentPolicy:         true,
	apierr.ContextWindowExceeded: true,
	apierr.InvalidRequest:        true,
	apierr.NotImplemented:        true,
	apierr.Internal:              true,
}

// perDeployment lists classes caused by one deployment's setup: retried only
// on another deployment of the group.
var perDeployment = map[apierr.Kind]bool{
	apierr.UpstreamAuth:     true,
	apierr.UpstreamNotFound: true,
	apierr.RateLimited:      true, // the deployment's own rpm/tpm is used up this minute: waiting cannot help
}

// anyClass is the cooldown bucket of failures counted against allowed_fails.
const anyClass = "any"

// Do serves req: it resolves the group, then tries deployments with retries
// and fallbacks, calling fn once per attempt.
func (r *Router) Do(ctx context.Context, req *Request, fn AttemptFunc) (*Result, error) {
	var first *group
	var name string
	var err error
	if t := req.Target; t.of(r) || req.TargetErr != nil {
		first, name, err = t.g, t.name, req.TargetErr
	} else {
		first, name, err = r.resolve(req.Model)
	}
	if err != nil {
		return &Result{}, err
	}
	if r.rs.Timeout > 0 {
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > r.rs.Timeout {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, r.rs.Timeout)
			defer cancel()
		}
	}
	s := &state{r: r, req: req, fn: fn, res: &Result{}, first: name, need: req.PromptTokens}
	err = s.tryGroup(ctx, first, name, 0)
	if err == nil {
		return s.res, nil
	}
	return s.res, s.withFallbacks(ctx, first, name, err)
}

type state struct {
	r       *Router
	req     *Request
	fn      AttemptFunc
	res     *Result
	visited []string // by model name: a wildcard group serves many models
	number  int
	first   string // the requested model's name after alias resolution
	// need is the prompt tokens the request was counted to need. A
	// deployment's refusal as too long does not raise it: its table window
	// may be larger than the upstream's real one (issue 20), so the refusal
	// says nothing certain of other groups' windows.
	need int
	// refused is set once an upstream refused the content.
	refused bool
	// ended is set when the last attempt ends the request whatever its
	// error: its output reached the client, or it aborted the request.
	ended bool
	// own is 1 + the index of the request's own fallback being tried
	// (Attempt.Own); 0 otherwise.
	own int
}

// tryGroup tries model, served by group g, with its retries.
func (s *state) tryGroup(ctx context.Context, g *group, model string, fallback int) error {
	r := s.r
	s.visited = append(s.visited, model)
	if len(g.nodes) == 0 {
		err := r.errNoRoute(g)
		s.res.Trace = append(s.res.Trace, Record{Group: g.name, Class: apierr.KindOf(err).String()})
		return err
	}
	var failed map[*node]error // allocated on the first failure
	var lastErr error
	var lastNode *node
	for retry := 0; ; retry++ {
		now := r.now()
		n, err := s.pick(ctx, g, now, failed)
		if err != nil {
			if lastErr != nil && apierr.KindOf(err) == apierr.RateLimited {
				return lastErr // every deployment failed or cooled: report the real failure
			}
			s.res.Trace = append(s.res.Trace, Record{Group: g.name, Class: apierr.KindOf(err).String()})
			return err
		}
		if retry > 0 {
			wait := r.backoff(retry, n == lastNode, lastErr)
			if wait < 0 {
				return lastErr
			}
			// The deadline is wall-clock time: compare it with the real
			// clock, not the injectable one that drives cooldowns.
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
				return lastErr
			}
			if err := r.sleep(ctx, wait); err != nil {
				return lastErr
			}
			s.res.Retries++
		}
		err = s.attempt(ctx, g, model, n, retry, fallback)
		if err == nil {
			return nil
		}
		if s.ended {
			return err
		}
		if failed == nil {
			failed = make(map[*node]error, len(g.nodes))
		}
		failed[n], lastErr, lastNode = err, err, n
		k := apierr.KindOf(err)
		if k == apierr.ContentPolicy {
			s.refused = true
		}
		if noRetry[k] || ctx.Err() != nil {
			return err
		}
		if perDeployment[k] && len(failed) >= len(g.nodes) {
			return err
		}
		if retry >= s.retries(g.name, n.d, k) {
			return err
		}
	}
}

// retries is how many retries a failure class of deployment d gets in a
// group: the retry policies, else the request's num_retries, else d's own
// (litellm_params.num_retries), else the router's.
func (s *state) retries(groupName string, d *config.Deployment, k apierr.Kind) int {
	class := k.String()
	if p, ok := s.r.rs.ModelGroupRetryPolicy[groupName]; ok {
		if n, ok := p[class]; ok {
			return n
		}
	}
	if n, ok := s.r.rs.RetryPolicy[class]; ok {
		return n
	}
	return s.maxRetries(d)
}

// maxRetries is the retries a group allows d before the retry policies:
// the request's num_retries, else d's own, else the router's.
func (s *state) maxRetries(d *config.Deployment) int {
	if s.req.NumRetries >= 0 {
		return s.req.NumRetries
	}
	if d.NumRetriesSet {
		return d.NumRetries
	}
	return s.r.rs.NumRetries
}

// backoff is the wait before a retry: none when switching to another
// deployment; exponential with full jitter on the same one; the provider's
// Retry-After when it sent one (capped: past the cap the group is given up,
// -1). retry_after sets a floor.
func (r *Router) backoff(retry int, same bool, lastErr error) time.Duration {
	floor := r.rs.RetryAfter
	if !same {
		return floor
	}
	if ra := apierr.From(lastErr).RetryAfter; ra > 0 {
		if ra > r.rs.MaxRetryAfter {
			return -1
		}
		return max(ra, floor)
	}
	const base, ceiling = 100 * time.Millisecond, 5 * time.Second
	exp := time.Duration(math.Min(float64(ceiling), float64(base)*math.Pow(2, float64(retry-1))))
	return max(time.Duration(r.rand()*float64(exp)), floor)
}
