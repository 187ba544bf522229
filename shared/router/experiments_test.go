package router

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-gw/sluice/shared/cooldown"
)

// The eight experiments of seeds/000 (LiteLLM v1.100.0's Router with
// scripted model calls), with the same configurations and expected traces.
// As in the seed, cooldowns are off for the first seven, so that retries and
// fallbacks are observed on their own.

var expWeights01 = modelList(
	dep("primary", "primary-a", "openai/gpt-4o-mini", "weight: 0"),
	dep("primary", "primary-b", "openai/gpt-4o-mini", "weight: 1"),
) + `router_settings:
  model_group_alias: {public: primary}
  disable_cooldowns: true
`

var expWeights00 = modelList(
	dep("primary", "primary-a", "openai/gpt-4o-mini", "weight: 0"),
	dep("primary", "primary-b", "openai/gpt-4o-mini", "weight: 0"),
) + `router_settings:
  disable_cooldowns: true
`

// expGroups has one deployment per group, as the seed's retry and fallback
// experiments do, so that traces are deterministic.
var expGroups = modelList(
	dep("primary", "primary-a", "openai/gpt-4o-mini", ""),
	dep("backup", "backup-a", "openai/gpt-4o", ""),
	dep("long", "long-a", "openai/gpt-4.1", ""),
) + `router_settings:
  disable_cooldowns: true
  num_retries: %d
  fallbacks: [{primary: [backup]}]
  context_window_fallbacks: [{primary: [long]}]
`

const expBlocked = `
model_list:
  - model_name: primary
    litellm_params: {model: openai/gpt-4o-mini, api_key: k, weight: 10}
    model_info: {id: primary-a, blocked: true}
  - model_name: primary
    litellm_params: {model: openai/gpt-4o-mini, api_key: k, weight: 1}
    model_info: {id: primary-b}
router_settings:
  disable_cooldowns: true
`

var rands = []float64{0, 0.25, 0.5, 0.75, 0.999999}

func TestSeedExperimentAliasAndZeroOneWeights(t *testing.T) {
	for _, rv := range rands {
		t.Run(fmt.Sprint(rv), func(t *testing.T) {
			rt := testRouter(t, load(t, expWeights01), Options{Rand: constRand(rv)})
			s := newScript(nil)
			res, err := rt.Do(context.Background(), req("public"), s.fn)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			assertTrace(t, res, hop{"primary", "primary-b", ""})
			a := res.Final
			if a.Alias != "public" || a.Group != "primary" || a.Deployment.ID != "primary-b" || a.ProviderModel != "gpt-4o-mini" || a.Number != 1 {
				t.Fatalf("attempt identities: alias=%q group=%q deployment=%q model=%q number=%d",
					a.Alias, a.Group, a.Deployment.ID, a.ProviderModel, a.Number)
			}
		})
	}
}

func TestSeedExperimentAllZeroWeightsStillPicks(t *testing.T) {
	// Weight 0 is not an off switch: with every weight 0 the choice is
	// uniform over the candidates.
	for _, tc := range []struct {
		rand float64
		want string
	}{{0, "primary-a"}, {0.49, "primary-a"}, {0.5, "primary-b"}, {0.999999, "primary-b"}} {
		t.Run(fmt.Sprint(tc.rand), func(t *testing.T) {
			rt := testRouter(t, load(t, expWeights00), Options{Rand: constRand(tc.rand)})
			res, err := rt.Do(context.Background(), req("primary"), newScript(nil).fn)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			assertTrace(t, res, hop{"primary", tc.want, ""})
		})
	}
}

// The seed's retry and fallback experiments: primary-a fails once, and the
// request is served by a retry in its group, by the general fallback, or by
// the context-window fallback.
func TestSeedExperimentRetryAndFallback(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retries int
		fail    error
		want    []hop
		check   func(t *testing.T, res *Result, s *script)
	}{
		{"one retry in group", 1, e500, []hop{{"primary", "primary-a", "server_error"}, {"primary", "primary-a", ""}},
			func(t *testing.T, res *Result, s *script) {
				if res.Retries != 1 || res.Fallbacks != 0 {
					t.Fatalf("retries=%d fallbacks=%d, want 1, 0", res.Retries, res.Fallbacks)
				}
				if got := [2]int{s.attempts[0].Retry, s.attempts[1].Retry}; got != [2]int{0, 1} {
					t.Fatalf("Attempt.Retry = %v, want [0 1]", got)
				}
			}},
		{"general fallback", 0, e500, []hop{{"primary", "primary-a", "server_error"}, {"backup", "backup-a", ""}},
			func(t *testing.T, res *Result, _ *script) {
				if res.Retries != 0 || res.Fallbacks != 1 || res.Final.Fallback != 1 {
					t.Fatalf("retries=%d fallbacks=%d final.Fallback=%d, want 0, 1, 1", res.Retries, res.Fallbacks, res.Final.Fallback)
				}
			}},
		{"context window fallback", 0, eCtx, []hop{{"primary", "primary-a", "context_window_exceeded"}, {"long", "long-a", ""}},
			func(t *testing.T, _ *Result, s *script) {
				if n := s.count("backup-a"); n != 0 {
					t.Fatalf("backup called %d times, want 0", n)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := testRouter(t, load(t, fmt.Sprintf(expGroups, tc.retries)), Options{})
			s := newScript(map[string][]error{"primary-a": {tc.fail}})
			res, err := rt.Do(context.Background(), req("primary"), s.fn)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			assertTrace(t, res, tc.want...)
			tc.check(t, res, s)
		})
	}
}

func TestSeedExperimentDisableFallbacksZeroRetries(t *testing.T) {
	rt := testRouter(t, load(t, fmt.Sprintf(expGroups, 0)), Options{})
	s := newScript(map[string][]error{"primary-a": repeat(e500, 5)})
	r := req("primary")
	r.NoFallbacks, r.NumRetries = true, 0
	res, err := rt.Do(context.Background(), r, s.fn)
	if err != e500 {
		t.Fatalf("err = %v, want the original error %v", err, e500)
	}
	assertTrace(t, res, hop{"primary", "primary-a", "server_error"})
	if n := s.count("backup-a") + s.count("long-a"); n != 0 {
		t.Fatalf("fallback groups called %d times, want 0", n)
	}
}

func TestSeedExperimentBlockedNeverSelected(t *testing.T) {
	for _, rv := range rands {
		t.Run(fmt.Sprint(rv), func(t *testing.T) {
			rt := testRouter(t, load(t, expBlocked), Options{Rand: constRand(rv)})
			res, err := rt.Do(context.Background(), req("primary"), newScript(nil).fn)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			assertTrace(t, res, hop{"primary", "primary-b", ""})
		})
	}
}

func TestSeedExperimentIndependentMemoryStores(t *testing.T) {
	// The router analogue of "two independent in-memory caches": state
	// written through one memory store is not seen through another.
	yaml := modelList(
		dep("primary", "primary-a", "openai/gpt-4o-mini", ""),
		dep("primary", "primary-b", "openai/gpt-4o-mini", ""),
	) + `router_settings:
  num_retries: 0
`
	clk := newClock()
	storeA, storeB := cooldown.NewMemory(), cooldown.NewMemory()
	cfg := load(t, yaml)
	rtA := testRouter(t, cfg, Options{Cooldowns: storeA, Now: clk.Now})
	rtB := testRouter(t, cfg, Options{Cooldowns: storeB, Now: clk.Now})

	s := newScript(map[string][]error{"primary-a": {e429}})
	res, err := rtA.Do(context.Background(), req("primary"), s.fn)
	if err != e429 {
		t.Fatalf("first request: err = %v, want %v", err, e429)
	}
	assertTrace(t, res, hop{"primary", "primary-a", "rate_limited"})

	res, err = rtA.Do(context.Background(), req("primary"), s.fn)
	if err != nil {
		t.Fatalf("router A: %v", err)
	}
	assertTrace(t, res, hop{"primary", "primary-b", ""})

	res, err = rtB.Do(context.Background(), req("primary"), s.fn)
	if err != nil {
		t.Fatalf("router B: %v", err)
	}
	assertTrace(t, res, hop{"primary", "primary-a", ""})

	ids := []string{"primary-a", "primary-b"}
	a, err := storeA.CoolingDown(context.Background(), ids, clk.Now())
	if err != nil || len(a) != 1 {
		t.Fatalf("store A cooling = %v, %v; want primary-a only", a, err)
	}
	if _, ok := a["primary-a"]; !ok {
		t.Fatalf("store A cooling = %v; want primary-a", a)
	}
	b, err := storeB.CoolingDown(context.Background(), ids, clk.Now())
	if err != nil || len(b) != 0 {
		t.Fatalf("store B cooling = %v, %v; want none", b, err)
	}
}
