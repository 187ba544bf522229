package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
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
}

// Attempt is one try at one deployment.
type Attempt struct {
	Alias         string // the model the client asked for
	Group         string // the model group tried
	Deployment    *config.Deployment
	ProviderModel string // the provider's model name for this attempt
	Number        int    // 1-based across the whole request
	Retry         int    // retries so far in this group
	Retries       int    // retries so far in the whole request (x-litellm-attempted-retries)
	Fallback      int    // fallbacks taken so far (0 = the requested group)
	// Timeout bounds a non-streamed attempt; StreamTimeout bounds the wait
	// for a stream's first chunk (stream_timeout, else timeout). Zero: no
	// bound beyond the request's.
	Timeout       time.Duration
	StreamTimeout time.Duration
	// Committed is set by the attempt function once output reached the
	// client: after that the router neither retries nor falls back.
	Committed bool
	// Abort is set by the attempt function when the failure is the
	// request's own (its key over a limit or budget): the router stops at
	// once, with no retry, no fallback and no cooldown.
	Abort bool
	// Tokens, set by the attempt function when known, feed usage strategies.
	Tokens int64
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
}

// AttemptFunc makes one attempt. It returns nil on success, or the failure as
// an *apierr.Error of an upstream kind.
type AttemptFunc func(ctx context.Context, a *Attempt) error

// noRetry lists classes that another try cannot fix.
// ErrDeploymentLimits is the cause of the 429 the router returns when every
// deployment of a group is at its own rpm/tpm limit in this instance's
// count; callers tell that refusal from others with errors.Is.
var ErrDeploymentLimits = errors.New("deployment rpm/tpm limits")

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

// cools lists classes that count towards a deployment's cooldown.
var cools = map[apierr.Kind]bool{
	apierr.UpstreamRateLimited: true,
	apierr.UpstreamTimeout:     true,
	apierr.UpstreamConnection:  true,
	apierr.UpstreamServer:      true,
	apierr.UpstreamAuth:        true,
	apierr.UpstreamNotFound:    true,
	apierr.StreamBroken:        true,
}

// Do serves req: it resolves the group, then tries deployments with retries
// and fallbacks, calling fn once per attempt.
func (r *Router) Do(ctx context.Context, req *Request, fn AttemptFunc) (*Result, error) {
	first, name, err := r.resolve(req.Model)
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
	// need is the prompt tokens the request is known to need: the
	// estimate, raised past the window of a deployment that refused it as
	// too long (estimates run low; a refusal is a fact).
	need int
	// refused is set once an upstream refused the content.
	refused bool
}

// withFallbacks walks the fallback chain of a failed group depth-first: each
// fallback group is tried with its own retries, then its own fallbacks; no
// group is visited twice and at most max_fallbacks groups are tried.
func (s *state) withFallbacks(ctx context.Context, g *group, model string, err error) error {
	orig := err
	var tried []string
	var walk func(g *group, model string, err error) error
	walk = func(g *group, model string, err error) error {
		for _, name := range s.fallbacksFor(g, model, err) {
			if s.res.Fallbacks >= s.r.rs.MaxFallbacks || ctx.Err() != nil {
				return err
			}
			fg, fname, rerr := s.r.resolve(name)
			if rerr != nil || slices.Contains(s.visited, fname) {
				continue
			}
			if s.need > 0 && fg.maxInput > 0 && s.need > fg.maxInput {
				s.r.log.LogAttrs(ctx, slog.LevelInfo, "fallback skipped: context window too small",
					slog.String("call_id", s.req.CallID), slog.String("group", fg.name),
					slog.Int("prompt_tokens", s.need), slog.Int("max_input_tokens", fg.maxInput))
				continue
			}
			s.res.Fallbacks++
			tried = append(tried, fname)
			ferr := s.tryGroup(ctx, fg, fname, s.res.Fallbacks)
			if ferr == nil {
				return nil
			}
			if committed(s.res) {
				return ferr
			}
			werr := walk(fg, fname, ferr)
			if werr == nil {
				return nil
			}
			// A refusal ends the chain: going on to this group's next
			// general fallback would route around it (LiteLLM #40406).
			if committed(s.res) || apierr.KindOf(werr) == apierr.ContentPolicy {
				return werr
			}
		}
		return err
	}
	if s.req.NoFallbacks || committed(s.res) {
		return orig
	}
	if werr := walk(g, model, err); werr == nil {
		return nil
	} else if committed(s.res) || werr != err {
		return werr // the stream broke, or a fallback refused the content
	}
	if len(tried) > 0 {
		e := *apierr.From(orig)
		e.Message = fmt.Sprintf("%s; fallbacks tried: %s", e.Message, strings.Join(tried, ", "))
		return &e
	}
	return orig
}

// committed reports whether the last attempt ends the request: output
// reached the client, or the attempt aborted the request.
func committed(res *Result) bool {
	return res.Final != nil && (res.Final.Committed || res.Final.Abort)
}

// fallbacksFor picks the fallback list for a failure of model (served by
// group g): the context-window list for context errors, the content-policy
// list for refusals (a refusal never takes the general list), else the
// request's own list, the configured list (exact or wildcard), or
// default_fallbacks.
func (s *state) fallbacksFor(g *group, model string, err error) []string {
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
		return nil
	}
	switch k {
	case apierr.ContextWindowExceeded:
		if len(rs.ContextWindowFallbacks) > 0 {
			return lookup(rs.ContextWindowFallbacks)
		}
	case apierr.ContentPolicy:
		return lookup(rs.ContentPolicyFallbacks)
	case apierr.UpstreamBadRequest, apierr.InvalidRequest, apierr.NotImplemented, apierr.Internal:
		if k != apierr.NotImplemented {
			return nil // the same request fails anywhere
		}
	}
	if s.req.FallbacksSet && s.res.Fallbacks == 0 && model == s.first {
		return s.req.Fallbacks
	}
	if fb := lookup(rs.Fallbacks); fb != nil {
		return fb
	}
	if s.res.Fallbacks == 0 {
		return rs.DefaultFallbacks
	}
	return nil
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
		if committed(s.res) {
			return err
		}
		if failed == nil {
			failed = make(map[*node]error, len(g.nodes))
		}
		failed[n], lastErr, lastNode = err, err, n
		k := apierr.KindOf(err)
		if k == apierr.ContextWindowExceeded && n.d.MaxInputTokens >= s.need {
			s.need = n.d.MaxInputTokens + 1
		}
		if k == apierr.ContentPolicy {
			s.refused = true
		}
		if noRetry[k] || ctx.Err() != nil {
			return err
		}
		if perDeployment[k] && len(failed) >= len(g.nodes) {
			return err
		}
		if retry >= s.retries(g.name, k) {
			return err
		}
	}
}

// retries is how many retries a failure class gets in a group.
func (s *state) retries(groupName string, k apierr.Kind) int {
	class := k.String()
	if p, ok := s.r.rs.ModelGroupRetryPolicy[groupName]; ok {
		if n, ok := p[class]; ok {
			return n
		}
	}
	if n, ok := s.r.rs.RetryPolicy[class]; ok {
		return n
	}
	if s.req.NumRetries >= 0 {
		return s.req.NumRetries
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

// pick filters the group's candidates and asks the strategy for one.
func (s *state) pick(ctx context.Context, g *group, now time.Time, failed map[*node]error) (*node, error) {
	r := s.r
	cands := filter(g.nodes, func(n *node) bool { return !n.d.Blocked })
	if len(cands) == 0 {
		return nil, apierr.New(apierr.RateLimited, "every deployment of model group %q is blocked", g.name)
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

// attempt runs one try, records it, and counts a failure towards cooldown.
func (s *state) attempt(ctx context.Context, g *group, model string, n *node, retry, fallback int) error {
	r := s.r
	s.number++
	d := n.d
	a := &Attempt{
		Alias: s.req.Model, Group: g.name, Deployment: d, ProviderModel: providerModel(d, model),
		Number: s.number, Retry: retry, Retries: s.res.Retries, Fallback: fallback,
		Timeout:       firstPositive(d.Timeout, r.rs.AttemptTimeout),
		StreamTimeout: firstPositive(d.StreamTimeout, r.rs.StreamTimeout, d.Timeout, r.rs.AttemptTimeout),
	}
	s.res.Final = a
	start := r.now()
	n.inflight.Add(1)
	err := s.fn(ctx, a)
	n.inflight.Add(-1)
	end := r.now()
	lat := end.Sub(start)
	n.addUsage(end, 1, a.Tokens+int64(s.req.PromptTokens))
	rec := Record{Group: g.name, Deployment: d.ID, Latency: lat}
	level, outcome := slog.LevelInfo, "success"
	if err != nil {
		rec.Class = apierr.KindOf(err).String()
		level, outcome = slog.LevelWarn, "failure"
		if errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled {
			outcome = "cancelled"
		}
		if rec.Class == apierr.UpstreamTimeout.String() {
			// A timeout is a (lower bound of a) latency: without it a
			// deployment that always times out stays "never measured"
			// and keeps winning latency-based routing.
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
	if err != nil && ctx.Err() == nil && !a.Abort {
		e := apierr.From(err)
		if until := r.recordFailure(ctx, d, e, end); e.Kind == apierr.UpstreamRateLimited && e.RetryAfter <= 0 && until.After(end) {
			e.RetryAfter = until.Sub(end) // a 429 without a hint: retry when the cooldown ends
		}
	}
	return err
}

func (r *Router) recordFailure(ctx context.Context, d *config.Deployment, e *apierr.Error, at time.Time) time.Time {
	k := e.Kind
	if r.rs.DisableCooldowns || !cools[k] || r.rs.CooldownTime <= 0 {
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
	if p, m, ok := strings.Cut(model, "/"); ok && p == d.Provider {
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
