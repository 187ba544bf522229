package router

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// twoDeployments is a group of two deployments; with rand fixed at 0 the
// uniform choice always takes primary-a when it is available.
var twoDeployments = primaryAB + `
router_settings:
  num_retries: 0
  allowed_fails: 2
  cooldown_time: 30
`

var primaryAB = modelList(
	dep("primary", "primary-a", "openai/gpt-4o-mini", ""),
	dep("primary", "primary-b", "openai/gpt-4o-mini", ""),
	dep("backup", "backup-a", "openai/gpt-4o", ""),
)

// doAt serves one request for model at time at and returns its trace.
func doAt(t *testing.T, rt *Router, clk *clock, at time.Time, model string, fn AttemptFunc) ([]hop, error) {
	t.Helper()
	clk.Set(at)
	res, err := rt.Do(context.Background(), req(model), fn)
	return hops(res), err
}

// servedAt is doAt for a request that must succeed.
func servedAt(t *testing.T, rt *Router, clk *clock, at time.Time, model string, fn AttemptFunc) []hop {
	t.Helper()
	got, err := doAt(t, rt, clk, at, model, fn)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func wantHops(t *testing.T, label string, got []hop, want ...hop) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: trace %v, want %v", label, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: trace %v, want %v", label, got, want)
		}
	}
}

func TestCooldownAfterAllowedFails(t *testing.T) {
	clk := newClock()
	rt := testRouter(t, load(t, twoDeployments), Options{Now: clk.Now})
	s := newScript(map[string][]error{"primary-a": repeat(e500, 3)})

	// allowed_fails: 2 tolerates two failures in the minute; the third cools
	// the deployment (LiteLLM: cooldown when fails > allowed_fails).
	for i, at := range []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)} {
		got, err := doAt(t, rt, clk, at, "primary", s.fn)
		if err != e500 {
			t.Fatalf("request %d: err = %v, want %v", i+1, err, e500)
		}
		wantHops(t, "request", got, hop{"primary", "primary-a", "server_error"})
	}
	until := t0.Add(2*time.Second + 30*time.Second)

	for _, tc := range []struct {
		name string
		at   time.Time
		want string
	}{
		{"very next request", t0.Add(2 * time.Second), "primary-b"},
		{"a second later", t0.Add(3 * time.Second), "primary-b"},
		{"at until-1ns", until.Add(-time.Nanosecond), "primary-b"},
		{"at until", until, "primary-a"},
	} {
		got, err := doAt(t, rt, clk, tc.at, "primary", s.fn)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		wantHops(t, tc.name, got, hop{"primary", tc.want, ""})
	}
}

// Failures of primary-a, each at its time and each the deployment's own
// answer, then one more request: a deployment cools once it failed more
// than allowed_fails times within a minute.
func TestCooldownAllowedFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fails []error
		at    []time.Time // of each failure
		then  time.Time
		want  string
	}{
		{"below allowed_fails keeps the deployment", repeat(e500, 2),
			[]time.Time{t0, t0.Add(time.Second)}, t0.Add(2 * time.Second), "primary-a"},
		// allowed_fails counts a deployment's failures in the minute, whatever
		// their class (LiteLLM counts failed calls per deployment); only
		// allowed_fails_policy sets per-class budgets.
		{"failures of different classes count together", []error{e500, eTime, e500},
			[]time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)}, t0.Add(3 * time.Second), "primary-b"},
		// Three failures, but never more than two inside any minute window...
		// the first two at t0, the third two minutes later.
		{"failures outside the minute do not count", repeat(e500, 3),
			[]time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Minute)}, t0.Add(2 * time.Minute), "primary-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			rt := testRouter(t, load(t, twoDeployments), Options{Now: clk.Now})
			s := newScript(map[string][]error{"primary-a": tc.fails})
			for i, at := range tc.at {
				if got, err := doAt(t, rt, clk, at, "primary", s.fn); err != tc.fails[i] || got[0].Deployment != "primary-a" {
					t.Fatalf("request %d: err = %v, went to %v", i+1, err, got)
				}
			}
			got := servedAt(t, rt, clk, tc.then, "primary", s.fn)
			wantHops(t, tc.name, got, hop{"primary", tc.want, ""})
		})
	}
}

func TestCooldownRateLimitIsImmediate(t *testing.T) {
	clk := newClock()
	rt := testRouter(t, load(t, twoDeployments), Options{Now: clk.Now})
	s := newScript(map[string][]error{"primary-a": {e429}})
	if _, err := doAt(t, rt, clk, t0, "primary", s.fn); err != e429 {
		t.Fatalf("err = %v, want %v", err, e429)
	}
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{t0, "primary-b"},
		{t0.Add(30*time.Second - time.Nanosecond), "primary-b"},
		{t0.Add(30 * time.Second), "primary-a"},
	} {
		got := servedAt(t, rt, clk, tc.at, "primary", s.fn)
		wantHops(t, tc.at.Sub(t0).String(), got, hop{"primary", tc.want, ""})
	}
}

func TestCooldownAllowedFailsPolicyOverridesImmediate429(t *testing.T) {
	clk := newClock()
	cfg := load(t, twoDeployments+`
  allowed_fails_policy: {RateLimitErrorAllowedFails: 1}
`)
	rt := testRouter(t, cfg, Options{Now: clk.Now})
	s := newScript(map[string][]error{"primary-a": {e429, e429}})
	got, _ := doAt(t, rt, clk, t0, "primary", s.fn)
	wantHops(t, "first 429", got, hop{"primary", "primary-a", "rate_limited"})
	got, _ = doAt(t, rt, clk, t0, "primary", s.fn)
	wantHops(t, "one 429 tolerated", got, hop{"primary", "primary-a", "rate_limited"})
	got, _ = doAt(t, rt, clk, t0, "primary", s.fn)
	wantHops(t, "second 429 cools", got, hop{"primary", "primary-b", ""})
}

func TestCooldownWholeGroup429WithEarliestEnd(t *testing.T) {
	clk := newClock()
	rt := testRouter(t, load(t, twoDeployments), Options{Now: clk.Now})
	s := newScript(map[string][]error{"primary-a": {e429}, "primary-b": {e429}})
	got, _ := doAt(t, rt, clk, t0, "primary", s.fn)
	wantHops(t, "a", got, hop{"primary", "primary-a", "rate_limited"})
	got, _ = doAt(t, rt, clk, t0.Add(time.Second), "primary", s.fn)
	wantHops(t, "b", got, hop{"primary", "primary-b", "rate_limited"})

	// a cools until t0+30s, b until t0+31s.
	clk.Set(t0.Add(5 * time.Second))
	res, err := rt.Do(context.Background(), req("primary"), s.fn)
	assertTrace(t, res, hop{"primary", "", "rate_limit_exceeded"})
	e := apierr.From(err)
	if e.Kind != apierr.RateLimited || e.HTTPStatus() != http.StatusTooManyRequests {
		t.Fatalf("err = %v (status %d), want rate limited 429", err, e.HTTPStatus())
	}
	if e.RetryAfter != 25*time.Second {
		t.Fatalf("RetryAfter = %v, want 25s (earliest end t0+30s)", e.RetryAfter)
	}
	if e.Code != "no_deployments_available" {
		t.Fatalf("code = %q", e.Code)
	}
	if n := s.count("primary-a") + s.count("primary-b"); n != 2 {
		t.Fatalf("attempts = %d, want 2 (none while every deployment cools)", n)
	}

	got = servedAt(t, rt, clk, t0.Add(30*time.Second), "primary", s.fn)
	wantHops(t, "a back at its end", got, hop{"primary", "primary-a", ""})
}

func TestCooldownWholeGroupCoolingTakesFallbacks(t *testing.T) {
	clk := newClock()
	rt := testRouter(t, load(t, twoDeployments+"  fallbacks: [{primary: [backup]}]\n"), Options{Now: clk.Now})
	s := newScript(map[string][]error{"primary-a": {e429}, "primary-b": {e429}})
	doAt(t, rt, clk, t0, "primary", s.fn)
	doAt(t, rt, clk, t0, "primary", s.fn)
	got := servedAt(t, rt, clk, t0.Add(time.Second), "primary", s.fn)
	wantHops(t, "cooling group falls back", got, hop{"primary", "", "rate_limit_exceeded"}, hop{"backup", "backup-a", ""})
}

func TestCooldownDisabled(t *testing.T) {
	clk := newClock()
	rt := testRouter(t, load(t, twoDeployments+"  disable_cooldowns: true\n"), Options{Now: clk.Now})
	s := newScript(map[string][]error{"primary-a": {e429}})
	doAt(t, rt, clk, t0, "primary", s.fn)
	got := servedAt(t, rt, clk, t0, "primary", s.fn)
	wantHops(t, "no cooldown", got, hop{"primary", "primary-a", ""})
}

func TestCooldownNotForCallerErrors(t *testing.T) {
	// Errors the caller caused say nothing about the deployment's health.
	clk := newClock()
	rt := testRouter(t, load(t, primaryAB+"router_settings: {num_retries: 0, allowed_fails: 0}\n"), Options{Now: clk.Now})
	for _, e := range []error{eBad, eCtx, ePolicy} {
		s := newScript(map[string][]error{"primary-a": {e}})
		doAt(t, rt, clk, t0, "primary", s.fn)
		got := servedAt(t, rt, clk, t0, "primary", s.fn)
		wantHops(t, apierr.KindOf(e).String(), got, hop{"primary", "primary-a", ""})
	}
}

// TestOnCooldown: the hook hears of each cooldown this instance starts,
// once, with the failure's status; failures below allowed_fails start none.
func TestOnCooldown(t *testing.T) {
	type call struct {
		group, deployment string
		status            int
		until             time.Time
	}
	var calls []call
	clk := newClock()
	rt := testRouter(t, load(t, twoDeployments), Options{Now: clk.Now, OnCooldown: func(g, d string, status int, until time.Time) {
		calls = append(calls, call{g, d, status, until})
	}})
	s := newScript(map[string][]error{"primary-a": repeat(e500, 3)})
	for i, at := range []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)} {
		if _, err := doAt(t, rt, clk, at, "primary", s.fn); err != e500 {
			t.Fatalf("request %d: err = %v", i+1, err)
		}
		if want := max(i-1, 0); len(calls) != want {
			t.Fatalf("after request %d: %d cooldowns reported, want %d", i+1, len(calls), want)
		}
	}
	want := call{"primary", "primary-a", apierr.From(e500).HTTPStatus(), t0.Add(32 * time.Second)}
	if calls[0] != want {
		t.Fatalf("cooldown reported %+v, want %+v", calls[0], want)
	}
}
