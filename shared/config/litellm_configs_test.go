package config

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// LiteLLM's own configs (testdata/litellm: its repository's
// proxy_server_config.yaml and example configs) load: what the gateway does
// not implement is a warning naming the key, never a refusal (issue 20).
func TestLiteLLMConfigsLoad(t *testing.T) {
	getenv := env(map[string]string{
		"OPENAI_API_KEY": "sk-test", "AZURE_API_KEY": "az", "ANTHROPIC_API_KEY": "ant",
		"AZURE_API_BASE": "https://env.openai.azure.com/", "FAKE_OPENAI_API_BASE": "http://127.0.0.1:9/v1",
		"LITELLM_MASTER_KEY": "sk-master",
	})
	tests := map[string]struct {
		deployments int
		warnings    []string // substrings that must appear among the warnings
		check       func(t *testing.T, c *Config)
	}{
		"proxy_server_config.yaml": {
			deployments: 19,
			warnings: []string{
				`model_list[7].litellm_params.model (line 51): missing model name after "azure/"`,
				`provider "sagemaker" is not implemented yet`,
				"model_list[5].litellm_params.input_cost_per_second", "model_list[13].model_info.health_check_timeout",
				"finetune_settings", "files_settings", "general_settings.pass_through_endpoints",
				"router_settings.redis_host", "litellm_settings.default_team_settings",
			},
			check: func(t *testing.T, c *Config) {
				if !c.Router.EnablePreCallChecks || c.Router.NumRetries != 5 || c.General.MasterKey != "sk-1234" {
					t.Errorf("settings: %+v %+v", c.Router, c.General)
				}
				if d := c.Deployments[3]; d.Timeout != 300*time.Second || d.StreamTimeout != 60*time.Second || d.RPM != 480 {
					t.Errorf("gpt-3.5-turbo-large: %+v", d)
				}
				if d := c.Deployments[13]; !d.MockTimeout || d.Timeout != 60*time.Second {
					t.Errorf("bad-model: mock_timeout not read: %+v", d)
				}
			},
		},
		"simple_config.yaml":            {deployments: 1},
		"azure_config.yaml":             {deployments: 2, warnings: []string{"model_list[0].litellm_params.max_retries"}},
		"azure_config_with_tpm.yaml":    {deployments: 2},
		"aliases_config.yaml":           {deployments: 3, warnings: []string{`provider "ollama" is not implemented yet`}},
		"health_check_test_config.yaml": {deployments: 1, warnings: []string{"general_settings.background_health_checks"}},
		"load_balancer.yaml": {
			deployments: 4,
			warnings:    []string{`unknown provider "mistralai"`, "environment_variables"},
			check: func(t *testing.T, c *Config) {
				if d := c.Deployments[0]; d.RPM != 3 || d.TPM != 20000 {
					t.Errorf("rpm/tpm beside litellm_params not read: %+v", d)
				}
			},
		},
		"multi_instance_simple_config.yaml": {deployments: 1, warnings: []string{"litellm_settings.cache"}},
		"oai_misc_config.yaml":              {deployments: 5, warnings: []string{"model_list[4].litellm_params.s3_bucket_name"}},
		"otel_test_config.yaml": {deployments: 4, warnings: []string{"guardrails"}, check: func(t *testing.T, c *Config) {
			if !slices.Contains(c.Callbacks.Both, "otel") {
				t.Errorf("callbacks = %+v, want otel on", c.Callbacks)
			}
		}},
		"pass_through_config.yaml":   {deployments: 7, warnings: []string{"general_settings.custom_auth", "litellm_settings.include_cost_in_streaming_usage"}},
		"spend_tracking_config.yaml": {deployments: 1, warnings: []string{"general_settings.use_redis_transaction_buffer"}},
		"store_model_db_config.yaml": {deployments: 1, warnings: []string{"general_settings.custom_team_metadata_validate"}},
		// LiteLLM's complete-schema example (docs/proxy/config_settings.md):
		// its one entry has no model, and its fallbacks name groups it
		// does not define; LiteLLM starts, and so does the gateway.
		"config_settings_complete.yaml": {deployments: 0, warnings: []string{
			"model_list[0].litellm_params.model (line 5): is required",
			`router_settings.fallbacks[0].claude-2[0] (line 164): unknown model group "my-fallback-model"; this fallback is left out`,
			`litellm_settings.default_fallbacks[0] (line 33): unknown model group "claude-opus"`,
			"router_settings.tag_filtering_match_any (line 147): not supported yet",
			`litellm_settings.turn_off_message_logging (line 21): must be true or false, got "boolean"; read as true`,
		}, check: func(t *testing.T, c *Config) {
			if !c.Callbacks.TurnOffMessageLogging || !c.Callbacks.RedactUserAPIKeyInfo {
				t.Errorf("a placeholder privacy setting must read as on: %+v", c.Callbacks)
			}
		}},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "litellm", "*.yaml"))
	if err != nil || len(files) != len(tests) {
		t.Fatalf("testdata/litellm holds %d configs (%v), the table checks %d", len(files), err, len(tests))
	}
	for _, f := range files {
		name := filepath.Base(f)
		tt, ok := tests[name]
		if !ok {
			t.Errorf("%s: not in the table", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			c, err := LoadFile(f, getenv)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if len(c.Deployments) != tt.deployments {
				t.Errorf("deployments = %d, want %d", len(c.Deployments), tt.deployments)
			}
			wantWarnings(t, c, tt.warnings...)
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}
