package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/config"
)

func TestKeyManagement(t *testing.T) {
	const y = `model_list:
  - model_name: a
    litellm_params: {model: openai/gpt-4o-mini, api_key: os.environ/OPENAI_API_KEY}
general_settings:
  key_management_system: aws_secret_manager
  key_management_settings:
    primary_secret_name: sluice/providers
    hosted_keys: ["ANTHROPIC_API_KEY", sluice/providers, ANTHROPIC_API_KEY]
    access_mode: read_only
`
	km, err := config.KeyManagementOf([]byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !km.On() || km.PrimarySecretName != "sluice/providers" || !slices.Equal(km.Secrets(), []string{"sluice/providers", "ANTHROPIC_API_KEY"}) {
		t.Errorf("KeyManagementOf = %+v, secrets %v", km, km.Secrets())
	}
	env := func(k string) (string, bool) { return "sk-" + k, true }
	cfg, err := config.Load([]byte(y), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings %v", cfg.Warnings)
	}
	d := cfg.Deployments[0]
	if d.APIKeyEnv != "OPENAI_API_KEY" || d.Key() != "sk-OPENAI_API_KEY" || !cfg.General.KeyManagement.On() {
		t.Errorf("deployment key %q from %q; key management %+v", d.Key(), d.APIKeyEnv, cfg.General.KeyManagement)
	}
}

// What does not apply is warned about with its reason; the rest loads.
func TestKeyManagementWarnings(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"general_settings: {key_management_system: azure_key_vault}\n", "only aws_secret_manager"},
		{"general_settings: {key_management_system: aws_secret_manager}\n", "neither primary_secret_name nor hosted_keys"},
		{"general_settings: {key_management_system: aws_secret_manager, key_management_settings: {primary_secret_name: s, access_mode: write_only}}\n", "only reads secrets"},
		{"general_settings: {key_management_system: aws_secret_manager, key_management_settings: {primary_secret_name: s, store_virtual_keys: true}}\n", "hashed in DynamoDB"},
		{"general_settings: {key_management_settings: {primary_secret_name: s, nope: 1}}\n", "not supported"},
	} {
		cfg, err := config.Load([]byte(tt.yaml), nil)
		if err != nil {
			t.Errorf("%q: %v", tt.yaml, err)
			continue
		}
		if !slices.ContainsFunc(cfg.Warnings, func(w config.Warning) bool { return strings.Contains(w.Message, tt.want) }) {
			t.Errorf("%q: warnings %v, want one saying %q", tt.yaml, cfg.Warnings, tt.want)
		}
	}
	if _, err := config.Load([]byte("general_settings: {key_management_settings: {hosted_keys: {a: 1}}}\n"), nil); err == nil || !strings.Contains(err.Error(), "hosted_keys") {
		t.Errorf("hosted_keys as a mapping: %v; want an error naming it", err)
	}
}
