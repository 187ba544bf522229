package router

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/cooldown/cooldowntest"
)

// t0 is the injected clock's start: any fixed instant works.
var t0 = time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)

// clock is an injected clock that only moves when told to.
type clock = cooldowntest.Clock

func newClock() *clock { return cooldowntest.NewClock(t0) }

// hop is a trace record without its latency.
type hop struct{ Group, Deployment, Class string }

func (h hop) String() string { return fmt.Sprintf("%s/%s:%s", h.Group, h.Deployment, h.Class) }

func hops(res *Result) []hop {
	if res == nil {
		return nil
	}
	out := make([]hop, 0, len(res.Trace))
	for _, r := range res.Trace {
		out = append(out, hop{r.Group, r.Deployment, r.Class})
	}
	return out
}

func assertTrace(t *testing.T, res *Result, want ...hop) {
	t.Helper()
	got := hops(res)
	if len(want) == 0 {
		want = []hop{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("trace:\n got  %v\n want %v", got, want)
	}
}

// load parses a LiteLLM config.
func load(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	return cfg
}

// constRand always returns v.
func constRand(v float64) func() float64 { return func() float64 { return v } }

// seqRand returns vals in turn, then repeats the last one.
func seqRand(vals ...float64) func() float64 {
	var mu sync.Mutex
	i := 0
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		v := vals[min(i, len(vals)-1)]
		i++
		return v
	}
}

func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// testRouter builds a router with test collaborators: the given clock (a
// fresh one when nil), no backoff waits, rand fixed at 0 unless opt says
// otherwise, a fresh memory cooldown store, and discarded logs.
func testRouter(t *testing.T, cfg *config.Config, opt Options) *Router {
	t.Helper()
	if opt.Now == nil {
		opt.Now = newClock().Now
	}
	if opt.Sleep == nil {
		opt.Sleep = noSleep
	}
	if opt.Rand == nil {
		opt.Rand = constRand(0)
	}
	if opt.Cooldowns == nil {
		opt.Cooldowns = cooldown.NewMemory()
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return New(cfg, opt)
}

// script is an AttemptFunc with scripted outcomes per deployment id: the
// n-th attempt at a deployment returns plan[id][n], or nil (success) once the
// plan is used up. It records every attempt it sees.
type script struct {
	mu       sync.Mutex
	plan     map[string][]error
	calls    map[string]int
	attempts []Attempt
	// each, if set, runs at the start of every attempt (e.g. to move a clock).
	each func(a *Attempt)
	// midStream lists deployments whose failures happen after output was
	// committed to the client (a stream broken after its first chunk).
	midStream map[string]bool
}

func newScript(plan map[string][]error) *script {
	if plan == nil {
		plan = map[string][]error{}
	}
	return &script{plan: plan, calls: map[string]int{}}
}

func (s *script) fn(_ context.Context, a *Attempt) (Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.each != nil {
		s.each(a)
	}
	id := a.Deployment.ID
	n := s.calls[id]
	s.calls[id]++
	s.attempts = append(s.attempts, *a)
	if p := s.plan[id]; n < len(p) {
		return Outcome{Committed: s.midStream[id]}, p[n]
	}
	return Outcome{Committed: true}, nil
}

// plain is an AttemptFunc that reports only an error: nothing committed,
// nothing aborted, no tokens.
func plain(f func(ctx context.Context, a *Attempt) error) AttemptFunc {
	return func(ctx context.Context, a *Attempt) (Outcome, error) { return Outcome{}, f(ctx, a) }
}

func (s *script) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[id]
}

// upstream failures by class.
func fail(k apierr.Kind) *apierr.Error { return apierr.New(k, "scripted %s", k) }

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

var (
	e500    = fail(apierr.UpstreamServer)
	e429    = fail(apierr.UpstreamRateLimited)
	eTime   = fail(apierr.UpstreamTimeout)
	eCtx    = fail(apierr.ContextWindowExceeded)
	ePolicy = fail(apierr.ContentPolicy)
	eBad    = fail(apierr.UpstreamBadRequest)
	eAuth   = fail(apierr.UpstreamAuth)
	eBroken = fail(apierr.StreamBroken)
)

func req(model string) *Request { return &Request{Model: model, NumRetries: -1} }

// modelList is a config's model_list of deps, with the rest of the config
// (router_settings) to follow.
func modelList(deps ...string) string { return "\nmodel_list:\n" + strings.Join(deps, "") }

// dep is one model_list entry: deployment id of group, serving model with
// api_key k and extra litellm_params such as "rpm: 1".
func dep(group, id, model, params string) string {
	if params != "" {
		params = ", " + params
	}
	return fmt.Sprintf("  - model_name: %q\n    litellm_params: {model: %q, api_key: k%s}\n    model_info: {id: %s}\n", group, model, params, id)
}
