package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
)

// The property test: random configurations and failure sequences, each case
// from its own fixed seed (rerun one with -run 'TestProperties/seed=N').

const propertyCases = 400

var propertyClasses = []string{"rate_limited", "timeout", "connection_error", "server_error", "bad_request",
	"auth", "not_found", "context_window_exceeded", "content_policy"}

var propertyErrors = []*apierr.Error{e500, e429, eTime, fail(apierr.UpstreamConnection), eBad, eAuth,
	fail(apierr.UpstreamNotFound), eCtx, ePolicy}

// randomConfig builds 2-5 groups of 1-3 deployments and random router
// settings, fallback graphs included (cycles too: the router must cope with
// per-request lists, which config validation never sees).
func randomConfig(rng *rand.Rand) *config.Config {
	cfg := &config.Config{}
	nGroups := 2 + rng.IntN(4)
	groups := make([]string, nGroups)
	for i := range groups {
		groups[i] = fmt.Sprintf("g%d", i)
		for j := range 1 + rng.IntN(3) {
			d := &config.Deployment{
				ID: fmt.Sprintf("g%d-d%d", i, j), ModelName: groups[i], Provider: "openai", Model: "m",
				Protocol: config.ProtocolOpenAI, Implemented: true,
				Blocked: rng.IntN(10) == 0,
			}
			if rng.IntN(2) == 0 {
				d.MaxInputTokens = 1000 * (1 + rng.IntN(10))
			}
			if rng.IntN(3) == 0 {
				d.Weight, d.HasWeight = float64(rng.IntN(3)), true
			}
			if rng.IntN(4) == 0 {
				d.Order = 1 + rng.IntN(2)
			}
			cfg.Deployments = append(cfg.Deployments, d)
		}
	}
	subset := func() []string {
		var out []string
		for _, g := range rng.Perm(nGroups) {
			if rng.IntN(2) == 0 {
				out = append(out, groups[g])
			}
		}
		return out
	}
	graph := func() []config.Fallback {
		var fbs []config.Fallback
		for _, g := range groups {
			if rng.IntN(2) == 0 {
				fbs = append(fbs, config.Fallback{From: g, To: subset()})
			}
		}
		if rng.IntN(4) == 0 {
			fbs = append(fbs, config.Fallback{From: "*", To: subset()})
		}
		return fbs
	}
	policy := func() map[string]int {
		if rng.IntN(2) == 0 {
			return nil
		}
		p := map[string]int{}
		for _, c := range propertyClasses {
			if rng.IntN(3) == 0 {
				p[c] = rng.IntN(4)
			}
		}
		return p
	}
	rs := config.RouterSettings{
		RoutingStrategy:        []string{"simple-shuffle", "least-busy", "latency-based-routing", "usage-based-routing-v2", "cost-based-routing"}[rng.IntN(5)],
		NumRetries:             rng.IntN(4),
		RetryPolicy:            policy(),
		AllowedFails:           rng.IntN(3),
		AllowedFailsPolicy:     policy(),
		CooldownTime:           time.Duration(rng.IntN(3)) * 5 * time.Second,
		DisableCooldowns:       rng.IntN(4) == 0,
		Timeout:                time.Minute,
		MaxRetryAfter:          30 * time.Second,
		Fallbacks:              graph(),
		ContextWindowFallbacks: graph(),
		ContentPolicyFallbacks: graph(),
		MaxFallbacks:           rng.IntN(5),
		EnablePreCallChecks:    rng.IntN(2) == 0,
	}
	if rng.IntN(3) == 0 {
		rs.DefaultFallbacks = subset()
	}
	if rng.IntN(3) == 0 {
		rs.ModelGroupRetryPolicy = map[string]map[string]int{groups[rng.IntN(nGroups)]: policy()}
	}
	cfg.Router = rs
	return cfg
}

func randomRequest(rng *rand.Rand, cfg *config.Config) *Request {
	groups := cfg.Groups()
	r := &Request{
		Model:        groups[rng.IntN(len(groups))],
		PromptTokens: rng.IntN(12000),
		Stream:       rng.IntN(2) == 0,
		NoFallbacks:  rng.IntN(5) == 0,
		NumRetries:   -1,
	}
	if rng.IntN(4) == 0 {
		r.NumRetries = rng.IntN(3)
	}
	if rng.IntN(4) == 0 {
		r.FallbacksSet = true
		for _, g := range rng.Perm(len(groups)) {
			if rng.IntN(2) == 0 {
				r.Fallbacks = append(r.Fallbacks, groups[g])
			}
		}
	}
	return r
}

// maxRetries bounds the retries any failure class gets in group.
func maxRetries(rs config.RouterSettings, req *Request, group string) int {
	n := rs.NumRetries
	if req.NumRetries >= 0 {
		n = req.NumRetries
	}
	for _, v := range rs.RetryPolicy {
		n = max(n, v)
	}
	for _, v := range rs.ModelGroupRetryPolicy[group] {
		n = max(n, v)
	}
	return n
}

// knownWindow is the largest context window of group's deployments, 0 when
// any is unknown.
func knownWindow(cfg *config.Config, group string) int {
	w := 0
	for _, d := range cfg.Deployments {
		if d.ModelName == group {
			if d.MaxInputTokens == 0 {
				return 0
			}
			w = max(w, d.MaxInputTokens)
		}
	}
	return w
}

func TestProperties(t *testing.T) {
	for seed := range uint64(propertyCases) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			cfg := randomConfig(rng)
			clk := newClock()
			store := cooldown.NewMemory()
			rt := testRouter(t, cfg, Options{Now: clk.Now, Cooldowns: store, Rand: rng.Float64})
			for i := range 6 {
				r := randomRequest(rng, cfg)
				checkRequest(t, rng, cfg, rt, store, clk, r, fmt.Sprintf("request %d %+v", i, *r))
				clk.Advance(time.Duration(rng.IntN(20)) * time.Second)
			}
		})
	}
}

func checkRequest(t *testing.T, rng *rand.Rand, cfg *config.Config, rt *Router, store cooldown.Store, clk *clock, r *Request, label string) {
	t.Helper()
	rs := cfg.Router
	var attempts []*Attempt
	var outcomes []Outcome
	blocked := map[string]bool{}
	for _, d := range cfg.Deployments {
		blocked[d.ID] = d.Blocked
	}
	fn := func(ctx context.Context, a *Attempt) (out Outcome, err error) {
		attempts = append(attempts, a)
		defer func() { outcomes = append(outcomes, out) }()
		if blocked[a.Deployment.ID] {
			t.Errorf("%s: attempt on blocked deployment %s", label, a.Deployment.ID)
		}
		if !rs.DisableCooldowns {
			cooling, _ := store.CoolingDown(ctx, []string{a.Deployment.ID}, clk.Now())
			if len(cooling) > 0 {
				t.Errorf("%s: attempt on %s while it cools down until %v", label, a.Deployment.ID, cooling[a.Deployment.ID])
			}
		}
		clk.Advance(time.Duration(rng.IntN(1000)) * time.Millisecond)
		switch x := rng.IntN(10); {
		case x < 2:
			return Outcome{Committed: true}, nil
		case x == 2 && r.Stream:
			return Outcome{Committed: true}, eBroken
		case x == 3 && rng.IntN(4) == 0: // the request's own limit: stop at once
			return Outcome{Abort: true}, fail(apierr.BudgetExceeded)
		default:
			return Outcome{}, propertyErrors[rng.IntN(len(propertyErrors))]
		}
	}
	res, err := rt.Do(context.Background(), r, fn)
	trace := hops(res)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\ntrace %v\n"+format, append([]any{label, trace}, args...)...)
	}

	// Attempts and the trace agree; attempts are numbered in order.
	var attemptRecs []hop
	var attemptPos []int // index of each attempt's record in the trace
	for i, h := range trace {
		if h.Deployment != "" {
			attemptRecs = append(attemptRecs, h)
			attemptPos = append(attemptPos, i)
		}
	}
	if len(attemptRecs) != len(attempts) {
		fail("%d attempt records, %d attempts", len(attemptRecs), len(attempts))
	}
	for i, a := range attempts {
		if a.Number != i+1 || a.Deployment.ID != attemptRecs[i].Deployment || a.Group != attemptRecs[i].Group {
			fail("attempt %d is #%d %s/%s", i+1, a.Number, a.Group, a.Deployment.ID)
		}
	}

	// Runs of one group: no group visited twice, each within its retries.
	type run struct {
		group string
		hops  []hop
	}
	var runs []run
	for _, h := range trace {
		if len(runs) == 0 || runs[len(runs)-1].group != h.Group {
			runs = append(runs, run{group: h.Group})
		}
		runs[len(runs)-1].hops = append(runs[len(runs)-1].hops, h)
	}
	if len(trace) == 0 {
		fail("empty trace (err %v)", err)
	}
	if runs[0].group != r.Model {
		fail("first group %s, want %s", runs[0].group, r.Model)
	}
	seen := map[string]bool{}
	for i, ru := range runs {
		if seen[ru.group] {
			fail("group %s visited twice", ru.group)
		}
		seen[ru.group] = true
		n := 0
		for j, h := range ru.hops {
			if h.Deployment == "" && j != len(ru.hops)-1 {
				fail("selection failure inside run %d", i)
			}
			if h.Deployment != "" {
				n++
			}
		}
		if limit := 1 + maxRetries(rs, r, ru.group); n > limit {
			fail("%d attempts in group %s, limit %d", n, ru.group, limit)
		}
	}
	if res.Fallbacks != len(runs)-1 || res.Fallbacks > rs.MaxFallbacks {
		fail("fallbacks %d, runs %d, max_fallbacks %d", res.Fallbacks, len(runs), rs.MaxFallbacks)
	}
	if r.NoFallbacks && len(runs) > 1 {
		fail("disable_fallbacks but %d groups", len(runs))
	}
	// Attempt.Fallback is the index of its group's run.
	k := 0
	for i, ru := range runs {
		for _, h := range ru.hops {
			if h.Deployment != "" {
				if attempts[k].Fallback != i {
					fail("attempt %d: Fallback %d, run %d", k+1, attempts[k].Fallback, i)
				}
				k++
			}
		}
	}

	// Nothing follows a committed, aborted or successful attempt.
	for i, o := range outcomes {
		if (o.Committed || o.Abort || attemptRecs[i].Class == "") && attemptPos[i] != len(trace)-1 {
			fail("attempt %d committed, aborted or succeeded, then %d more records", i+1, len(trace)-1-attemptPos[i])
		}
	}
	if (err == nil) != (len(attempts) > 0 && attemptRecs[len(attemptRecs)-1].Class == "" && trace[len(trace)-1].Deployment != "") {
		fail("err %v but last record %v", err, trace[len(trace)-1])
	}

	// After a content refusal, only content_policy_fallbacks of the groups
	// that refused lead anywhere.
	var allowed []string
	refused := false
	for _, ru := range runs {
		if refused && !slices.Contains(allowed, ru.group) {
			fail("group %s entered after a refusal; content_policy_fallbacks allow %v", ru.group, allowed)
		}
		if last := ru.hops[len(ru.hops)-1]; last.Class == "content_policy" {
			refused = true
			allowed = append(allowed, config.FallbacksFor(rs.ContentPolicyFallbacks, ru.group)...)
		}
	}

	// With pre-call checks, fallback groups whose known window is smaller
	// than the counted prompt are never entered.
	if rs.EnablePreCallChecks {
		for i, ru := range runs {
			if w := knownWindow(cfg, ru.group); i > 0 && w > 0 && r.PromptTokens > w {
				fail("fell back to %s (window %d) for a request needing %d", ru.group, w, r.PromptTokens)
			}
		}
	}
}
