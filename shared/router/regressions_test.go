package router

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

// Regression tests for the LiteLLM bugs listed in issue 3.

// groupsYAML is one single-deployment group per name (deployment id
// "<name>-a"), plus router settings.
func groupsYAML(settings string, groups ...string) string {
	s := "model_list:\n"
	for _, g := range groups {
		s += fmt.Sprintf("  - model_name: %q\n    litellm_params: {model: openai/m-%s, api_key: k}\n    model_info: {id: %s-a}\n", g, g, g)
	}
	return s + "router_settings:\n" + settings
}

// Wildcard fallbacks silently ignored (LiteLLM PR#35689: "*" keys in
// context_window_fallbacks and content_policy_fallbacks did nothing).
func TestRegressionWildcardFallbacks(t *testing.T) {
	fb := func(from string, to ...string) []config.Fallback { return []config.Fallback{{From: from, To: to}} }
	for _, tc := range []struct {
		name string
		set  func(rs *config.RouterSettings)
		fail error
		want []hop
	}{
		{
			name: "general fallbacks, pattern key",
			set:  func(rs *config.RouterSettings) { rs.Fallbacks = fb("gpt-*", "backup") },
			fail: e500,
			want: []hop{{"gpt-4o", "gpt-4o-a", "server_error"}, {"backup", "backup-a", ""}},
		},
		{
			name: "general fallbacks, star key",
			set:  func(rs *config.RouterSettings) { rs.Fallbacks = fb("*", "backup") },
			fail: e500,
			want: []hop{{"gpt-4o", "gpt-4o-a", "server_error"}, {"backup", "backup-a", ""}},
		},
		{
			name: "context window fallbacks, star key",
			set: func(rs *config.RouterSettings) {
				rs.Fallbacks, rs.ContextWindowFallbacks = fb("*", "backup"), fb("*", "long")
			},
			fail: eCtx,
			want: []hop{{"gpt-4o", "gpt-4o-a", "context_window_exceeded"}, {"long", "long-a", ""}},
		},
		{
			name: "content policy fallbacks, star key",
			set: func(rs *config.RouterSettings) {
				rs.Fallbacks, rs.ContentPolicyFallbacks = fb("*", "backup"), fb("*", "safe")
			},
			fail: ePolicy,
			want: []hop{{"gpt-4o", "gpt-4o-a", "content_policy"}, {"safe", "safe-a", ""}},
		},
		{
			name: "exact key wins over a pattern",
			set: func(rs *config.RouterSettings) {
				rs.Fallbacks = append(fb("*", "backup"), fb("gpt-4o", "safe")...)
			},
			fail: e500,
			want: []hop{{"gpt-4o", "gpt-4o-a", "server_error"}, {"safe", "safe-a", ""}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The lists are set on the loaded config: config.Load rejects
			// "*" keys as cycles (see TestRegressionWildcardFallbackKeysLoad).
			cfg := load(t, groupsYAML("  num_retries: 0\n", "gpt-4o", "backup", "long", "safe"))
			tc.set(&cfg.Router)
			rt := testRouter(t, cfg, Options{})
			s := newScript(map[string][]error{"gpt-4o-a": {tc.fail}})
			res, err := rt.Do(context.Background(), req("gpt-4o"), s.fn)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			assertTrace(t, res, tc.want...)
		})
	}
}

// wildcardModels serves any "openai/..." model through one wildcard group.
var wildcardModels = modelList(
	dep("openai/*", "openai-any", "openai/*", ""),
	dep("backup", "backup-a", "openai/gpt-4o", ""),
	dep("primary", "primary-a", "openai/gpt-4.1", ""),
) + `router_settings:
  num_retries: 0
`

// Fallbacks and wildcard groups: a fallback keyed by a model that a
// wildcard group serves (LiteLLM #12691, PR#36058: fallbacks for
// wildcard-routed models never fire); a fallback target that a wildcard
// group serves, called with the fallback's model, not the client's; two
// models served by the same wildcard group are different models, one can be
// the fallback of the other.
func TestRegressionFallbackWildcardGroup(t *testing.T) {
	for _, tc := range []struct {
		name, fallbacks, failing, model string
		want                            []hop
		providerModels                  map[int]string // by attempt
	}{
		{"key served by wildcard group", `{"openai/gpt-4o-mini": [backup]}`, "openai-any", "openai/gpt-4o-mini",
			[]hop{{"openai/*", "openai-any", "server_error"}, {"backup", "backup-a", ""}},
			map[int]string{0: "gpt-4o-mini"}},
		{"target served by wildcard group", `{primary: ["openai/gpt-4o-mini"]}`, "primary-a", "primary",
			[]hop{{"primary", "primary-a", "server_error"}, {"openai/*", "openai-any", ""}},
			map[int]string{1: "gpt-4o-mini"}},
		{"between models of one wildcard group", `{"openai/gpt-4o": ["openai/gpt-4o-mini"]}`, "openai-any", "openai/gpt-4o",
			[]hop{{"openai/*", "openai-any", "server_error"}, {"openai/*", "openai-any", ""}},
			map[int]string{0: "gpt-4o", 1: "gpt-4o-mini"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := testRouter(t, load(t, wildcardModels+"  fallbacks: ["+tc.fallbacks+"]\n"), Options{})
			s := newScript(map[string][]error{tc.failing: {e500}})
			res, err := rt.Do(context.Background(), req(tc.model), s.fn)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			assertTrace(t, res, tc.want...)
			for i, want := range tc.providerModels {
				if got := s.attempts[i].ProviderModel; got != want {
					t.Errorf("attempt %d provider model = %q, want %q", i, got, want)
				}
			}
		})
	}
}

// contextGroups: primary (8k), small (4k), big (128k), unknown (no window).
const contextGroups = `
model_list:
  - model_name: primary
    litellm_params: {model: openai/gpt-4, api_key: k}
    model_info: {id: primary-a, max_input_tokens: 8000}
  - model_name: small
    litellm_params: {model: openai/gpt-3.5, api_key: k}
    model_info: {id: small-a, max_input_tokens: 4000}
  - model_name: big
    litellm_params: {model: openai/gpt-4.1, api_key: k}
    model_info: {id: big-a, max_input_tokens: 128000}
  - model_name: unknown
    litellm_params: {model: openai/other, api_key: k}
    model_info: {id: unknown-a}
router_settings:
  num_retries: 0
`

// With pre-call checks (enable_pre_call_checks), never fall back to a group
// whose known context window is smaller than the counted prompt (LiteLLM
// #31557); without them every configured fallback is tried, as in LiteLLM.
func TestRegressionNoFallbackToSmallerContextWindow(t *testing.T) {
	const checks = "  enable_pre_call_checks: true\n"
	for _, tc := range []struct {
		name     string
		settings string
		tokens   int
		fail     error
		want     []hop
	}{
		{
			name:     "rate limited primary skips the too-small fallback",
			settings: checks + "  fallbacks: [{primary: [small, big]}]\n",
			tokens:   6000, fail: e429,
			want: []hop{{"primary", "primary-a", "rate_limited"}, {"big", "big-a", ""}},
		},
		{
			name:     "without pre-call checks the too-small fallback is tried",
			settings: "  fallbacks: [{primary: [small, big]}]\n",
			tokens:   6000, fail: e429,
			want: []hop{{"primary", "primary-a", "rate_limited"}, {"small", "small-a", ""}},
		},
		{
			name:     "a fallback that fits is kept",
			settings: checks + "  fallbacks: [{primary: [small, big]}]\n",
			tokens:   3000, fail: e500,
			want: []hop{{"primary", "primary-a", "server_error"}, {"small", "small-a", ""}},
		},
		{
			name:     "unknown window is not skipped",
			settings: checks + "  fallbacks: [{primary: [unknown, big]}]\n",
			tokens:   6000, fail: e500,
			want: []hop{{"primary", "primary-a", "server_error"}, {"unknown", "unknown-a", ""}},
		},
		{
			// The count (3000) fits small's 4k: the refusing deployment's
			// table window says nothing certain of the prompt (the
			// upstream's real window may be smaller than the table's).
			name:     "context error: a fallback the count fits is tried",
			settings: checks + "  context_window_fallbacks: [{primary: [small, big]}]\n",
			tokens:   3000, fail: eCtx,
			want: []hop{{"primary", "primary-a", "context_window_exceeded"}, {"small", "small-a", ""}},
		},
		{
			name:     "default fallbacks too",
			settings: checks + "  default_fallbacks: [small, big]\n",
			tokens:   6000, fail: e500,
			want: []hop{{"primary", "primary-a", "server_error"}, {"big", "big-a", ""}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := testRouter(t, load(t, contextGroups+tc.settings), Options{})
			s := newScript(map[string][]error{"primary-a": {tc.fail}})
			r := req("primary")
			r.PromptTokens = tc.tokens
			res, err := rt.Do(context.Background(), r, s.fn)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			assertTrace(t, res, tc.want...)
		})
	}
}

func TestRegressionNoFallbackToSmallerContextWindowPerRequestList(t *testing.T) {
	rt := testRouter(t, load(t, contextGroups+"  enable_pre_call_checks: true\n"), Options{})
	s := newScript(map[string][]error{"primary-a": {e500}})
	r := req("primary")
	r.PromptTokens, r.Fallbacks, r.FallbacksSet = 6000, []string{"small", "big"}, true
	res, err := rt.Do(context.Background(), r, s.fn)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	assertTrace(t, res, hop{"primary", "primary-a", "server_error"}, hop{"big", "big-a", ""})
}

// A context-window error reaches context_window_fallbacks even when the
// fallback group's table window is not larger than the refusing
// deployment's: the upstream's real window (8192) was smaller than its table
// entry (128000), so the prompt fits the fallback (issue 20). Before, the
// router assumed the prompt needed 128001 tokens and skipped the fallback.
func TestRegressionContextFallbackNotSkippedOnTableWindow(t *testing.T) {
	const groups = `
model_list:
  - model_name: primary
    litellm_params: {model: openai/gpt-4, api_key: k}
    model_info: {id: primary-a, max_input_tokens: 128000}
  - model_name: long
    litellm_params: {model: openai/gpt-4o, api_key: k}
    model_info: {id: long-a, max_input_tokens: 128000}
router_settings:
  num_retries: 0
  context_window_fallbacks: [{primary: [long]}]
`
	for _, checks := range []string{"", "  enable_pre_call_checks: true\n"} {
		t.Run("pre-call checks "+map[bool]string{true: "on", false: "off"}[checks != ""], func(t *testing.T) {
			rt := testRouter(t, load(t, groups+checks), Options{})
			s := newScript(map[string][]error{"primary-a": {eCtx}})
			r := req("primary")
			r.PromptTokens = 9000
			res, err := rt.Do(context.Background(), r, s.fn)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			assertTrace(t, res, hop{"primary", "primary-a", "context_window_exceeded"}, hop{"long", "long-a", ""})
		})
	}
}

// A content refusal never takes the general fallbacks (LiteLLM #40406): only
// content_policy_fallbacks.
func TestRegressionContentRefusalNeverTakesGeneralFallbacks(t *testing.T) {
	groups := []string{"primary", "backup", "other", "safe"}
	for _, tc := range []struct {
		name     string
		settings string
		plan     map[string][]error
		want     []hop
		wantErr  apierr.Kind
	}{
		{
			name:     "no content_policy_fallbacks: the refusal is the answer",
			settings: "  num_retries: 2\n  fallbacks: [{primary: [backup]}]\n  default_fallbacks: [other]\n",
			plan:     map[string][]error{"primary-a": {ePolicy}},
			want:     []hop{{"primary", "primary-a", "content_policy"}},
			wantErr:  apierr.ContentPolicy,
		},
		{
			name:     "content_policy_fallbacks only",
			settings: "  num_retries: 2\n  fallbacks: [{primary: [backup]}]\n  content_policy_fallbacks: [{primary: [safe]}]\n",
			plan:     map[string][]error{"primary-a": {ePolicy}, "safe-a": {ePolicy}},
			want:     []hop{{"primary", "primary-a", "content_policy"}, {"safe", "safe-a", "content_policy"}},
			wantErr:  apierr.ContentPolicy,
		},
		{
			// primary fails for another reason; the general fallback
			// refuses the content: the chain must not go on to the next
			// general fallback around that refusal.
			name:     "refusal inside a general fallback chain stops it",
			settings: "  num_retries: 0\n  fallbacks: [{primary: [backup, other]}]\n",
			plan:     map[string][]error{"primary-a": {e500}, "backup-a": {ePolicy}},
			want:     []hop{{"primary", "primary-a", "server_error"}, {"backup", "backup-a", "content_policy"}},
			wantErr:  apierr.ContentPolicy,
		},
		{
			name:     "refusal inside a chain takes that group's content_policy_fallbacks only",
			settings: "  num_retries: 0\n  fallbacks: [{primary: [backup, other]}]\n  content_policy_fallbacks: [{backup: [safe]}]\n",
			plan:     map[string][]error{"primary-a": {e500}, "backup-a": {ePolicy}, "safe-a": {ePolicy}},
			want:     []hop{{"primary", "primary-a", "server_error"}, {"backup", "backup-a", "content_policy"}, {"safe", "safe-a", "content_policy"}},
			wantErr:  apierr.ContentPolicy,
		},
		{
			// safe was approved for refused content; its own general
			// fallback was not.
			name:     "a content-policy fallback failing otherwise does not reopen the general lists",
			settings: "  num_retries: 0\n  fallbacks: [{safe: [other]}]\n  content_policy_fallbacks: [{primary: [safe]}]\n",
			plan:     map[string][]error{"primary-a": {ePolicy}, "safe-a": {e500}},
			want:     []hop{{"primary", "primary-a", "content_policy"}, {"safe", "safe-a", "server_error"}},
			wantErr:  apierr.ContentPolicy,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := testRouter(t, load(t, groupsYAML(tc.settings, groups...)), Options{})
			s := newScript(tc.plan)
			res, err := rt.Do(context.Background(), req("primary"), s.fn)
			if k := apierr.KindOf(err); err == nil || k != tc.wantErr {
				t.Fatalf("err = %v, want kind %v", err, tc.wantErr)
			}
			assertTrace(t, res, tc.want...)
		})
	}
}

// A deployment returning 500s is skipped by the very next request once
// allowed_fails is exceeded (LiteLLM PR#34836: 25 consecutive 500s left a
// deployment in rotation; cooldowns were only read every ~10 s).
func TestRegressionFailingDeploymentSkippedByVeryNextRequest(t *testing.T) {
	yaml := modelList(
		dep("primary", "bad", "openai/gpt-4o", "weight: 200"),
		dep("primary", "good", "openai/gpt-4o", "weight: 1"),
	) + `router_settings:
  num_retries: 0
  cooldown_time: 15
`
	clk := newClock()
	rt := testRouter(t, load(t, yaml), Options{Now: clk.Now, Rand: constRand(0.5)})
	s := newScript(map[string][]error{"bad": repeat(e500, 100)})
	// Default allowed_fails is 3: failures 1-3 are tolerated, the 4th cools.
	for i := 1; i <= 4; i++ {
		clk.Set(t0.Add(time.Duration(i) * time.Millisecond))
		res, _ := rt.Do(context.Background(), req("primary"), s.fn)
		assertTrace(t, res, hop{"primary", "bad", "server_error"})
	}
	for i, at := range []time.Duration{4 * time.Millisecond, 5 * time.Millisecond, 10 * time.Second, 15*time.Second + 4*time.Millisecond - time.Nanosecond} {
		clk.Set(t0.Add(at))
		res, err := rt.Do(context.Background(), req("primary"), s.fn)
		if err != nil {
			t.Fatalf("request %d after the threshold: %v", i+1, err)
		}
		assertTrace(t, res, hop{"primary", "good", ""})
	}
	if n := s.count("bad"); n != 4 {
		t.Fatalf("bad called %d times, want 4", n)
	}
}

// A deployment that fails while serving as a fallback is cooled like any
// other (LiteLLM PR#34416: failed fallback deployments were never cooled).
func TestRegressionFallbackDeploymentsCoolDown(t *testing.T) {
	yaml := modelList(
		dep("primary", "primary-a", "openai/gpt-4o", ""),
		dep("backup", "backup-a", "openai/gpt-4o-mini", ""),
		dep("backup", "backup-b", "openai/gpt-4o-mini", ""),
	) + `router_settings:
  num_retries: 0
  disable_cooldowns: false
  fallbacks: [{primary: [backup]}]
`
	clk := newClock()
	rt := testRouter(t, load(t, yaml), Options{Now: clk.Now})
	s := newScript(map[string][]error{"primary-a": {e500}, "backup-a": {e429}})
	res, _ := rt.Do(context.Background(), req("primary"), s.fn)
	assertTrace(t, res, hop{"primary", "primary-a", "server_error"}, hop{"backup", "backup-a", "rate_limited"})
	res, err := rt.Do(context.Background(), req("backup"), s.fn)
	if err != nil {
		t.Fatal(err)
	}
	assertTrace(t, res, hop{"backup", "backup-b", ""})
}

// Cooldown entries end exactly at cooldown_time (LiteLLM PR#34416: entries
// restored from the shared cache outlived it), and a later failure extends
// the cooldown rather than keeping the first, shorter end (LiteLLM #40130).
func TestRegressionCooldownEndsExactlyAndExtends(t *testing.T) {
	clk := newClock()
	rt := testRouter(t, load(t, twoDeployments), Options{Now: clk.Now})
	ctx := context.Background()

	// Request 1 is in flight on primary-a when request 2 gets a 429 from it
	// at t0; request 1's own 429 arrives at t0+10s.
	inner := plain(func(_ context.Context, a *Attempt) error { return e429 })
	outer := plain(func(_ context.Context, a *Attempt) error {
		clk.Set(t0)
		res, _ := rt.Do(ctx, req("primary"), inner)
		assertTrace(t, res, hop{"primary", "primary-a", "rate_limited"})
		clk.Set(t0.Add(10 * time.Second))
		return e429
	})
	clk.Set(t0)
	res, _ := rt.Do(ctx, req("primary"), outer)
	assertTrace(t, res, hop{"primary", "primary-a", "rate_limited"})

	s := newScript(nil)
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{30 * time.Second, "primary-b"}, // the first cooldown's end: extended
		{40*time.Second - time.Nanosecond, "primary-b"},
		{40 * time.Second, "primary-a"},
	} {
		clk.Set(t0.Add(tc.at))
		res, err := rt.Do(ctx, req("primary"), s.fn)
		if err != nil {
			t.Fatal(err)
		}
		assertTrace(t, res, hop{"primary", tc.want, ""})
	}
}

// Mid-stream errors end the stream: once an attempt committed output, the
// router neither retries nor falls back, and returns the stream's error for
// the gateway to send as an error event (LiteLLM #29808).
func TestRegressionMidStreamErrorEndsTheRequest(t *testing.T) {
	rt := testRouter(t, load(t, groupsYAML("  num_retries: 3\n  fallbacks: [{primary: [backup]}]\n", "primary", "backup")), Options{})
	s := newScript(map[string][]error{"primary-a": {eBroken}})
	s.midStream = map[string]bool{"primary-a": true}
	r := req("primary")
	r.Stream = true
	res, err := rt.Do(context.Background(), r, s.fn)
	if err != eBroken {
		t.Fatalf("err = %v, want %v", err, eBroken)
	}
	assertTrace(t, res, hop{"primary", "primary-a", "stream_broken"})
	if n := s.count("backup-a"); n != 0 {
		t.Fatalf("backup called %d times after the stream committed", n)
	}
}

// disable_fallbacks holds for streams (LiteLLM #19077): a stream that fails
// before its first chunk is retried in its group, never sent to a fallback.
func TestRegressionDisableFallbacksHoldsForStreams(t *testing.T) {
	cfg := load(t, groupsYAML("  num_retries: 1\n  fallbacks: [{primary: [backup]}]\n  default_fallbacks: [backup]\n", "primary", "backup"))
	for _, committedFirst := range []bool{false, true} {
		t.Run(fmt.Sprint("committed=", committedFirst), func(t *testing.T) {
			rt := testRouter(t, cfg, Options{})
			s := newScript(map[string][]error{"primary-a": {eTime, eTime}})
			want := []hop{{"primary", "primary-a", "timeout"}, {"primary", "primary-a", "timeout"}}
			if committedFirst {
				s.midStream = map[string]bool{"primary-a": true}
				want = want[:1]
			}
			r := req("primary")
			r.Stream, r.NoFallbacks = true, true
			res, err := rt.Do(context.Background(), r, s.fn)
			if err != eTime {
				t.Fatalf("err = %v, want %v", err, eTime)
			}
			assertTrace(t, res, want...)
			if n := s.count("backup-a"); n != 0 {
				t.Fatalf("backup called %d times", n)
			}
		})
	}
}

// The configuration LiteLLM documents for PR#35689 must load: a "*" key
// matches its own targets, which is not a cycle (a group is never visited
// twice in one request).
func TestRegressionWildcardFallbackKeysLoad(t *testing.T) {
	for _, list := range []string{"fallbacks", "context_window_fallbacks", "content_policy_fallbacks"} {
		t.Run(list, func(t *testing.T) {
			yaml := groupsYAML(fmt.Sprintf("  %s: [{\"*\": [backup]}]\n", list), "gpt-4o", "backup")
			if _, err := config.Load([]byte(yaml), nil); err != nil {
				t.Fatalf("config.Load: %v", err)
			}
		})
	}
}

// A deployment's own litellm_params.num_retries bounds its retries; the
// request's num_retries still wins (issue 20).
func TestDeploymentNumRetries(t *testing.T) {
	const yaml = `
model_list:
  - model_name: g
    litellm_params: {model: openai/m, api_key: k, num_retries: 3}
    model_info: {id: a}
router_settings:
  num_retries: 0
  disable_cooldowns: true
`
	for _, tc := range []struct {
		name       string
		reqRetries int
		want       int
	}{
		{"deployment's own", -1, 4},
		{"the request's wins", 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := testRouter(t, load(t, yaml), Options{})
			s := newScript(map[string][]error{"a": repeat(e500, 10)})
			r := req("g")
			r.NumRetries = tc.reqRetries
			if _, err := rt.Do(context.Background(), r, s.fn); err == nil {
				t.Fatal("want the failure")
			}
			if got := s.count("a"); got != tc.want {
				t.Errorf("attempts = %d, want %d", got, tc.want)
			}
		})
	}
}
