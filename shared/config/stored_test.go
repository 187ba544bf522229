package config

import (
	"strings"
	"testing"
)

const storedBase = `
model_list:
  - model_name: gpt
    litellm_params: {model: openai/gpt-4o, api_key: sk-config}
    model_info: {id: cfg-1}
litellm_settings:
  drop_params: true
general_settings:
  store_model_in_db: true
`

// A stored deployment loads by the config's code path: the same fields,
// the same error text and the same warnings as the equal config entry.
func TestStoredLoadsLikeConfig(t *testing.T) {
	env := func(n string) (string, bool) {
		if n == "UP_KEY" {
			return "sk-from-env", true
		}
		return "", false
	}
	s := Stored{ID: "db-1", ModelName: "claude", Params: map[string]any{
		"model": "anthropic/claude-x", "api_key": "os.environ/UP_KEY", "rpm": 7.0, "region_name": "EU", "frobnicate": 1.0,
		"input_cost_per_token": 0.5, "output_cost_per_token": 1.0}, Info: map[string]any{"access_groups": []any{"team-a"}}}
	cfg, err := LoadStored([]byte(storedBase), env, []Stored{s})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.General.StoreModelInDB {
		t.Fatal("store_model_in_db not read")
	}
	if len(cfg.Deployments) != 2 {
		t.Fatalf("%d deployments", len(cfg.Deployments))
	}
	d := cfg.Deployments[1]
	if d.ID != "db-1" || !d.Stored || d.ModelName != "claude" || d.Provider != "anthropic" || d.APIKey != "sk-from-env" ||
		d.RPM != 7 || d.Region != "eu" || !d.DropParams || d.Price == nil || d.Price.Input != 0.5 {
		t.Fatalf("stored deployment %+v", d)
	}
	if cfg.Deployments[0].Stored {
		t.Fatal("config deployment marked stored")
	}
	if got := cfg.AccessGroups["team-a"]; len(got) != 1 || got[0] != "claude" {
		t.Fatalf("access groups %v", cfg.AccessGroups)
	}
	found := false
	for _, w := range cfg.Warnings {
		if w.Path == "model_list[id=db-1].litellm_params.frobnicate" && w.Message == "not supported yet; ignored" && w.Line == 0 {
			found = true
		}
	}
	if !found {
		t.Fatalf("no warning for the unsupported param: %v", cfg.Warnings)
	}
	ws, err := CheckStored([]byte(storedBase), env, s)
	if err != nil || len(ws) != 1 || ws[0].Path != "litellm_params.frobnicate" {
		t.Fatalf("CheckStored = %v, %v", ws, err)
	}

	// The same error as in a config file, with the path inside the deployment.
	bad := Stored{ID: "db-2", ModelName: "x", Params: map[string]any{"model": "openai/gpt-4o", "rpm": "lots"}}
	_, cfgErr := Load([]byte("model_list:\n  - model_name: x\n    litellm_params: {model: openai/gpt-4o, rpm: lots}\n"), nil)
	_, err = CheckStored([]byte(storedBase), env, bad)
	if err == nil || cfgErr == nil || err.(*Error).Msg != cfgErr.(*Error).Msg || err.(*Error).Path != "litellm_params.rpm" {
		t.Fatalf("stored error %v, config error %v", err, cfgErr)
	}
	// Reloaded, a bad stored deployment is left out with a warning, not fatal.
	cfg, err = LoadStored([]byte(storedBase), env, []Stored{bad, s})
	if err != nil || len(cfg.Deployments) != 2 || cfg.Deployments[1].ID != "db-1" {
		t.Fatalf("reload with a bad stored deployment: %v", err)
	}
}

// A config deployment and a stored one with the same id: the config wins.
func TestStoredConfigWins(t *testing.T) {
	s := Stored{ID: "cfg-1", ModelName: "gpt", Params: map[string]any{"model": "openai/gpt-4o-mini", "api_key": "sk-db"}}
	cfg, err := LoadStored([]byte(storedBase), nil, []Stored{s})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Deployments) != 1 || cfg.Deployments[0].Stored || cfg.Deployments[0].APIKey != "sk-config" {
		t.Fatalf("deployments %+v", cfg.Deployments)
	}
	if w := cfg.Warnings[len(cfg.Warnings)-1]; !strings.Contains(w.Message, "config wins") {
		t.Fatalf("warning %v", w)
	}
	if _, err := CheckStored([]byte(storedBase), nil, s); err == nil || !strings.Contains(err.Error(), "cfg-1") {
		t.Fatalf("CheckStored of a config id: %v", err)
	}
}
