package app_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/app/spendapp"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// What the assembly takes from the functions' settings: the master key,
// the price table; the spend function's consumer.

// A LiteLLM config whose master_key names a variable the deployment does
// not set (os.environ/LITELLM_MASTER_KEY) still starts when the key comes
// from GATEWAY_MASTER_KEY, and the key is then required: never an open
// gateway.
func TestConfigMasterKeyFromOverride(t *testing.T) {
	yaml := keyedModel(t, "general_settings", "SLUICE_TEST_UNSET_MASTER_KEY")
	gw, err := buildFromEnv(t, yaml, map[string]string{"GATEWAY_MASTER_KEY": "sk-from-env"})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for key, want := range map[string]int{"": 401, "sk-wrong": 401, "sk-from-env": 200} {
		if rec := call(t, gw.Handler, context.Background(), key, body); rec.Code != want {
			t.Errorf("key %q: %d, want %d: %s", key, rec.Code, want, rec.Body)
		}
	}
}

// keyedModel is a config of model m on an upstream answering 200, with a
// master_key under section naming the environment variable variable.
func keyedModel(t *testing.T, section, variable string) string {
	up, _ := upstream(t, 200)
	return fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/m, api_base: %s, api_key: k}
%s:
  master_key: os.environ/%s
`, up.URL, section, variable)
}

// buildFromEnv builds a gateway of yaml as the gateway's main does, from
// the environment env.
func buildFromEnv(t *testing.T, yaml string, env map[string]string) (*app.Gateway, error) {
	t.Helper()
	e, err := appenv.Read(appenv.Gateway, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := app.FromEnv(context.Background(), e, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.ConfigYAML = []byte(yaml)
	gw, err := app.Build(context.Background(), s)
	if err == nil {
		t.Cleanup(func() { gw.Close(context.Background()) })
	}
	return gw, err
}

const pricedConfig = `model_list:
  - model_name: known
    litellm_params: {model: mock/gpt-4o-mini}
  - model_name: house
    litellm_params: {model: openai/house-model, api_base: "http://127.0.0.1:1/v1"}
`

func buildWith(t *testing.T, env map[string]string) (*app.Gateway, string, error) {
	t.Helper()
	var logs bytes.Buffer
	gw, err := app.Build(context.Background(), app.Settings{
		ConfigYAML: []byte(pricedConfig),
		Getenv:     func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Logger:     slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	return gw, logs.String(), err
}

// Build prices every deployment once, from the embedded table by default:
// the table fills the context window, and a deployment with no price is
// warned about at startup.
func TestBuildResolvesPrices(t *testing.T) {
	gw, logs, err := buildWith(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	known, house := gw.Config.Deployments[0], gw.Config.Deployments[1]
	want, _ := pricing.Default().Get("gpt-4o-mini")
	if known.Price == nil || known.Price.Input != want.Input || known.MaxInputTokens != 128000 {
		t.Errorf("mock gpt-4o-mini: price %+v window %d", known.Price, known.MaxInputTokens)
	}
	if house.Price != nil {
		t.Errorf("house model priced: %+v", house.Price)
	}
	if strings.Count(logs, "no price for deployment") != 1 || !strings.Contains(logs, "openai/house-model") {
		t.Errorf("want one startup warning for the house model: %s", logs)
	}
}

// GATEWAY_PRICES replaces the embedded table.
func TestBuildGatewayPrices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(`{
  "sample_spec": {"max_input_tokens": "max input tokens", "input_cost_per_token": 0.0},
  "house-model": {"input_cost_per_token": 1e-07, "output_cost_per_token": 2e-07, "max_input_tokens": 32000, "litellm_provider": "openai", "mode": "chat", "supports_vision": true}
}`), 0o600); err != nil {
		t.Fatal(err)
	}
	gw, logs, err := buildWith(t, map[string]string{app.PricesEnvVar: path})
	if err != nil {
		t.Fatal(err)
	}
	known, house := gw.Config.Deployments[0], gw.Config.Deployments[1]
	if house.Price == nil || house.Price.Input != 1e-7 || house.MaxInputTokens != 32000 {
		t.Errorf("house model from GATEWAY_PRICES: %+v window %d", house.Price, house.MaxInputTokens)
	}
	if known.Price == nil || *known.Price != (pricing.Price{}) || known.MaxInputTokens != 0 {
		t.Errorf("the embedded table still used: %+v window %d", known.Price, known.MaxInputTokens)
	}
	if strings.Contains(logs, "no price for deployment") {
		t.Errorf("unexpected warning: %s", logs)
	}

	if _, _, err := buildWith(t, map[string]string{app.PricesEnvVar: filepath.Join(t.TempDir(), "missing.json")}); err == nil || !strings.Contains(err.Error(), app.PricesEnvVar) {
		t.Errorf("a missing price file: %v", err)
	}
}

// TestSpendAppReplay: the consumer the spend function assembles from its settings
// (the tables named in the environment, the endpoint from the SDK's
// variables) records the events of a -replay file, once.
func TestSpendAppReplay(t *testing.T) {
	ddblocal.Config(t) // skips in -short, or fails with instructions, without an emulator
	t.Setenv("AWS_ACCESS_KEY_ID", "dummy")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "dummy")
	t.Setenv("AWS_REGION", ddblocal.Region)
	names := ddblocal.Tables(t)
	e1 := spendtest.Event(nil, "", time.Now(), 1000)
	e2 := spendtest.Event(nil, "end-user-1", time.Now(), 2000)
	file := filepath.Join(t.TempDir(), "lost.jsonl")
	if err := os.WriteFile(file, append(append(spend.Encode(&e1), '\n'), append(spend.Encode(&e2), '\n')...), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"KEYS_TABLE": names.Keys, "SPEND_TABLE": names.Spend, "COUNTERS_TABLE": names.Counters}
	e, err := appenv.Read(appenv.Spend, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, []string{"spend", "-replay", file})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := spendapp.Build(ctx, e, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second replay finds both recorded
		if err := a.Replay(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range []spend.Event{e1, e2} {
		logs, err := a.Store.Logs(ctx, spend.LogQuery{RequestID: ev.RequestID})
		if err != nil || len(logs) != 1 || logs[0].EndUser != ev.EndUser {
			t.Errorf("%s: %+v, %v", ev.RequestID, logs, err)
		}
	}
}

// LiteLLM's Claude Code quickstart names the master key under
// litellm_settings: the gateway reads it there, refuses to start when it
// resolves to nothing (naming the key and the variable), and serves only
// with the key once it does (issue 29).
func TestMasterKeyUnderLiteLLMSettings(t *testing.T) {
	yaml := keyedModel(t, "litellm_settings", "SLUICE_TEST_QUICKSTART_KEY")
	build := func(env map[string]string) (*app.Gateway, error) { return buildFromEnv(t, yaml, env) }
	for _, env := range []map[string]string{nil, {"SLUICE_TEST_QUICKSTART_KEY": ""}} {
		gw, err := build(env)
		if err == nil {
			rec := call(t, gw.Handler, context.Background(), "", `{"model":"m","messages":[]}`)
			t.Fatalf("env %v: started (a call with no key: %d)", env, rec.Code)
		}
		for _, want := range []string{"litellm_settings.master_key", "SLUICE_TEST_QUICKSTART_KEY", "refusing to start an open gateway"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("env %v: %q lacks %q", env, err, want)
			}
		}
	}
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		env map[string]string
		key string
	}{
		{map[string]string{"SLUICE_TEST_QUICKSTART_KEY": "sk-quick"}, "sk-quick"},
		// LITELLM_MASTER_KEY takes precedence, as in the quickstart, where
		// the variable named is that one.
		{map[string]string{"SLUICE_TEST_QUICKSTART_KEY": "sk-quick", "LITELLM_MASTER_KEY": "sk-env"}, "sk-env"},
		{map[string]string{"LITELLM_MASTER_KEY": "sk-env"}, "sk-env"},
	} {
		gw, err := build(tc.env)
		if err != nil {
			t.Fatalf("env %v: %v", tc.env, err)
		}
		for key, want := range map[string]int{"": 401, "sk-wrong": 401, tc.key: 200} {
			if rec := call(t, gw.Handler, context.Background(), key, body); rec.Code != want {
				t.Errorf("env %v, key %q: %d, want %d: %s", tc.env, key, rec.Code, want, rec.Body)
			}
		}
	}
}
