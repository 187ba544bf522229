package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluice-gw/sluice/shared/catalog"
)

// fuzzSecret is what every os.environ/ variable whose name says it holds a
// secret (KEY, SECRET, TOKEN, PASSWORD) resolves to in FuzzLoad.
const fuzzSecret = "sk-fuzz-secret-5b0d1c"

// FuzzLoad loads any bytes as a LiteLLM config. Invariants: no panic;
// either a config or an error, with a message (an *Error names its path);
// loading is deterministic (the same config, warnings and error twice); a
// loaded config satisfies what the gateway relies on (named groups, unique
// ids, known strategy, no negative count, limit, weight or duration); a
// secret resolved from the environment appears in no warning or error.
// env is the value of the variables that are not secrets ("" = unset).
//
// The seed corpus is in testdata/fuzz/FuzzLoad (with the fixtures under
// testdata/litellm-configs and LiteLLM's own configs under testdata/litellm).
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "litellm-configs", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join("testdata", "litellm", "*.yaml"))
	for _, p := range append(files, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, "value")
		}
	}
	f.Add(DefaultYAML(), "")
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		getenv := func(name string) (string, bool) {
			for _, s := range []string{"KEY", "SECRET", "TOKEN", "PASSWORD"} {
				if strings.Contains(strings.ToUpper(name), s) {
					return fuzzSecret, true
				}
			}
			return env, env != ""
		}
		cfg, err := Load(data, getenv)
		cfg2, err2 := Load(data, getenv)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Load = %v, %v: want exactly one of config and error", cfg, err)
		}
		if !reflect.DeepEqual(cfg, cfg2) || errString(err) != errString(err2) {
			t.Fatalf("two loads differ:\n%+v %v\n%+v %v", cfg, err, cfg2, err2)
		}
		secretInInput := strings.Contains(string(data), fuzzSecret) || strings.Contains(env, fuzzSecret)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Path == "" {
				t.Fatalf("error without a path: %v", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			if !secretInInput && strings.Contains(err.Error(), fuzzSecret) {
				t.Fatalf("a secret in the error: %v", err)
			}
			return
		}
		for _, w := range cfg.Warnings {
			if !secretInInput && strings.Contains(w.String(), fuzzSecret) {
				t.Fatalf("a secret in a warning: %s", w)
			}
		}
		checkConfig(t, cfg)
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkConfig asserts what the router and gateway rely on in a loaded config.
func checkConfig(t *testing.T, cfg *Config) {
	t.Helper()
	ids := map[string]bool{}
	for i, d := range cfg.Deployments {
		switch {
		case d.ModelName == "" || d.ModelName != strings.TrimSpace(d.ModelName):
			t.Fatalf("deployment %d: model_name %q", i, d.ModelName)
		case d.Implemented && (d.Provider == "" || d.Model == ""):
			t.Fatalf("deployment %d: provider %q model %q", i, d.Provider, d.Model)
		case !d.Implemented && d.Protocol != ProtocolNone:
			t.Fatalf("deployment %d: left out of routing, but with protocol %v", i, d.Protocol)
		case d.ID == "" || ids[d.ID]:
			t.Fatalf("deployment %d: id %q empty or repeated", i, d.ID)
		case d.RPM < 0 || d.TPM < 0 || d.Order < 0 || d.MaxInputTokens < 0 || d.MaxOutputTokens < 0:
			t.Fatalf("deployment %d: negative limit %+v", i, d)
		case d.Weight < 0 || math.IsNaN(d.Weight) || math.IsInf(d.Weight, 0):
			t.Fatalf("deployment %d: weight %v", i, d.Weight)
		case d.Timeout < 0 || d.StreamTimeout < 0:
			t.Fatalf("deployment %d: negative timeout %v / %v", i, d.Timeout, d.StreamTimeout)
		case d.Implemented && d.APIBase == "" && d.MockResponse == nil && needsBase(d.Provider) && d.Provider != "azure": // azure: its calls fail naming AZURE_API_BASE
			t.Fatalf("deployment %d: no api_base for %s", i, d.Provider)
		}
		for _, p := range []float64{d.InputCostPerToken, d.OutputCostPerToken, d.CacheReadCostPerToken, d.CacheWriteCostPerToken} {
			if p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
				t.Fatalf("deployment %d: price %v", i, p)
			}
		}
		ids[d.ID] = true
	}
	r := cfg.Router
	if _, ok := strategies[r.RoutingStrategy]; !ok || strategies[r.RoutingStrategy] != r.RoutingStrategy {
		t.Fatalf("routing strategy %q", r.RoutingStrategy)
	}
	if r.NumRetries < 0 || r.AllowedFails < 0 || r.MaxFallbacks < 0 {
		t.Fatalf("negative count in %+v", r)
	}
	for _, d := range []struct {
		name string
		v    int64
	}{{"cooldown_time", int64(r.CooldownTime)}, {"timeout", int64(r.Timeout)}, {"attempt timeout", int64(r.AttemptTimeout)},
		{"stream_timeout", int64(r.StreamTimeout)}, {"retry_after", int64(r.RetryAfter)}, {"max_retry_after", int64(r.MaxRetryAfter)}} {
		if d.v < 0 {
			t.Fatalf("%s is negative: %d", d.name, d.v)
		}
	}
	for _, m := range append([]map[string]int{r.RetryPolicy, r.AllowedFailsPolicy}, mapValues(r.ModelGroupRetryPolicy)...) {
		for k, v := range m {
			if v < 0 {
				t.Fatalf("policy %s = %d", k, v)
			}
		}
	}
	for alias, target := range r.ModelGroupAlias {
		if !slicesContains(cfg.Groups(), target) {
			t.Fatalf("alias %q to unknown group %q", alias, target)
		}
	}
}

func mapValues(m map[string]map[string]int) []map[string]int {
	out := make([]map[string]int, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// FuzzMatch compares Match, which sees client-chosen model names, with a
// regular expression (RE2: linear time) built from the pattern. Invariants:
// the same answer, and no exponential backtracking (a slow input hangs the
// fuzzer).
func FuzzMatch(f *testing.F) {
	f.Add("openai/*", "openai/gpt-4o")
	f.Add("gpt-*-mini*", "gpt-4o-mini-2024-07-18")
	f.Add("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 200))
	f.Add("**", "")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		parts := strings.Split(pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re, err := regexp.Compile(`\A(?s:` + strings.Join(parts, ".*") + `)\z`)
		if err != nil || !utf8.ValidString(pattern) || !utf8.ValidString(name) {
			return // regexp works on UTF-8; Match on bytes
		}
		if got, want := Match(pattern, name), re.MatchString(name); got != want {
			t.Fatalf("Match(%q, %q) = %v, want %v", pattern, name, got, want)
		}
	})
}

// Regression tests for what the fuzz seeds found, beyond "no panic".
func TestFuzzRegressions(t *testing.T) {
	load := func(name string) (*Config, error) {
		t.Helper()
		return Load([]byte(name), env(map[string]string{"OPENAI_API_KEY": "sk-provider-secret"}))
	}
	// Anchors, aliases and merge keys, as LiteLLM's YAML loader reads them.
	cfg, err := load(`
x-defaults: &defaults {api_key: os.environ/OPENAI_API_KEY, rpm: 100, timeout: 30}
groups: &fb [{gpt-4o: [mini]}]
model_list:
  - model_name: gpt-4o
    litellm_params: {<<: *defaults, model: openai/gpt-4o}
  - &mini
    model_name: mini
    litellm_params:
      <<: [*defaults, {tpm: 5}]
      model: openai/gpt-4o-mini
      rpm: 200
router_settings: {fallbacks: *fb, context_window_fallbacks: *fb, default_fallbacks: *fb2}
`)
	if err == nil || !strings.Contains(err.Error(), "fb2") {
		t.Fatalf("an unknown alias: %v", err)
	}
	cfg, err = load(`
x-defaults: &defaults {api_key: os.environ/OPENAI_API_KEY, rpm: 100, timeout: 30}
x-fb: &fb [{gpt-4o: [mini]}]
x-tags: &tags [a, b]
model_list:
  - model_name: gpt-4o
    litellm_params: {<<: *defaults, model: openai/gpt-4o, tags: *tags}
  - model_name: mini
    litellm_params:
      <<: [*defaults, {tpm: 5, rpm: 1}]
      model: openai/gpt-4o-mini
      rpm: 200
router_settings: {fallbacks: *fb, context_window_fallbacks: *fb}
`)
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Deployments[0], cfg.Deployments[1]
	if a.APIKey != "sk-provider-secret" || a.RPM != 100 || a.Timeout != 30*time.Second || len(a.Tags) != 2 ||
		b.RPM != 200 || b.TPM != 5 || b.APIKey != "sk-provider-secret" {
		t.Errorf("merged params: %+v\n%+v", a, b)
	}
	if got := FallbacksFor(cfg.Router.ContextWindowFallbacks, "gpt-4o"); len(got) != 1 || got[0] != "mini" {
		t.Errorf("aliased fallbacks: %v", cfg.Router.ContextWindowFallbacks)
	}
	// Seconds that overflow a time.Duration are refused, not wrapped negative.
	if _, err := load("model_list:\n  - {model_name: m, litellm_params: {model: openai/m, timeout: 1e10}}\n"); err == nil {
		t.Error("timeout: 1e10 seconds loaded")
	}
	// A bad value from the environment is named, not shown.
	_, err = load("model_list:\n  - {model_name: m, litellm_params: {model: openai/m, rpm: os.environ/OPENAI_API_KEY}}\n")
	if err == nil || strings.Contains(err.Error(), "sk-provider-secret") || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("error %v", err)
	}
	// Merges of merges are bounded.
	_, err = load(`
a: &a {rpm: 1}
b: &b {<<: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]}
c: &c {<<: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]}
d: &d {<<: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]}
model_list:
  - {model_name: m, litellm_params: {<<: *d, model: openai/m}}
`)
	if err == nil || !strings.Contains(err.Error(), "merged mappings") {
		t.Errorf("merge bomb: %v", err)
	}
}

func needsBase(provider string) bool {
	e, _ := catalog.Lookup(provider)
	return e.NeedsBase
}
