package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) Getenv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

var fixtureEnv = env(map[string]string{
	"AZURE_EAST_KEY": "east", "AZURE_SWEDEN_KEY": "sweden", "OPENAI_API_KEY": "sk-test",
	"AZURE_API_KEY": "az", "ANTHROPIC_API_KEY": "ant", "LITELLM_MASTER_KEY": "sk-master", "DATABASE_URL": "postgres://x",
})

// The fixture configs from the seeds (testdata/litellm-configs) must load
// unchanged.
func TestFixturesLoad(t *testing.T) {
	dir := filepath.Join("testdata", "litellm-configs")
	tests := []struct {
		file        string
		deployments int
		check       func(t *testing.T, c *Config)
		warnings    []string // substrings that must appear among the warnings
	}{
		{
			file: "seed002-router.yaml", deployments: 3,
			check: func(t *testing.T, c *Config) {
				r := c.Router
				if r.NumRetries != 2 || r.AllowedFails != 3 || r.CooldownTime != 30*time.Second || r.AttemptTimeout != 10*time.Second {
					t.Errorf("router settings = %+v", r)
				}
				if got := FallbacksFor(r.Fallbacks, "gpt-4o"); len(got) != 1 || got[0] != "gpt-4o-fallback" {
					t.Errorf("fallbacks = %v", got)
				}
				d := c.Deployments[1]
				if d.Provider != "azure" || d.Model != "gpt-4o" || d.APIBase != "https://swedencentral.example.azure.com" || d.APIKey != "sweden" {
					t.Errorf("deployment 1 = %+v", d)
				}
				if c.Deployments[0].ID == c.Deployments[1].ID {
					t.Error("two deployments of one group share an id")
				}
			},
		},
		{
			file: "seed003-production.yaml", deployments: 3,
			check: func(t *testing.T, c *Config) {
				r := c.Router
				if r.RoutingStrategy != "usage-based-routing-v2" || r.NumRetries != 2 || r.CooldownTime != 120*time.Second || !r.EnablePreCallChecks {
					t.Errorf("router settings = %+v", r)
				}
				d := c.Deployments[0]
				if d.RPM != 900 || d.TPM != 100000 || d.Timeout != 30*time.Second {
					t.Errorf("model_info limits not read: %+v", d)
				}
				if az := c.Deployments[1]; az.APIVersion != "2024-02-01" || az.APIBase != "https://my-azure-endpoint.openai.azure.com" {
					t.Errorf("azure deployment = %+v", az)
				}
				if claude := c.Deployments[2]; !claude.Implemented || claude.Provider != "anthropic" || claude.Protocol != ProtocolAnthropic {
					t.Errorf("anthropic deployment should load as implemented: %+v", claude)
				}
				if c.General.MasterKey != "sk-master" {
					t.Errorf("master key = %q", c.General.MasterKey)
				}
				if !c.General.Alerting.On("slack") || !c.General.Alerting.Wants("budget_alerts") {
					t.Errorf("alerting = %+v, want slack with every alert type", c.General.Alerting)
				}
			},
			warnings: []string{
				"cache (line", "response caching is not supported yet",
				"general_settings.database_url", "state lives in DynamoDB",
				"general_settings.redis_host",
			},
		},
		{
			file: "seed003-ratelimit.yaml", deployments: 1,
			check: func(t *testing.T, c *Config) {
				if d := c.Deployments[0]; d.RPM != 1000 || d.TPM != 120000 {
					t.Errorf("limits = %d/%d", d.RPM, d.TPM)
				}
			},
			warnings: []string{"max_parallel_requests", "reserved concurrency"},
		},
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) != len(tests) {
		t.Fatalf("%s holds %d configs (%v), the table checks %d", dir, len(files), err, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := LoadFile(filepath.Join(dir, tt.file), fixtureEnv)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if len(c.Deployments) != tt.deployments {
				t.Fatalf("deployments = %d, want %d", len(c.Deployments), tt.deployments)
			}
			tt.check(t, c)
			wantWarnings(t, c, tt.warnings...)
		})
	}
}

func TestBrokenConfigs(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"bad rpm", "model_list:\n  - model_name: a\n    litellm_params: {model: openai/x, rpm: lots}\n", `model_list[0].litellm_params.rpm (line 3): must be a whole number, got "lots"`},
		{"negative timeout", "model_list:\n  - model_name: a\n    litellm_params: {model: openai/x, timeout: -1}\n", "must not be negative"},
		{"bad api_base", "model_list:\n  - model_name: a\n    litellm_params: {model: openai/x, api_base: localhost:8000}\n", "must be an http:// or https:// URL"},
		{"unknown strategy", "model_list: []\nrouter_settings: {routing_strategy: fastest}\n", `router_settings.routing_strategy (line 2): unknown routing strategy "fastest"`},
		{"fallback cycle", "model_list:\n  - model_name: a\n    litellm_params: {model: openai/x}\n  - model_name: b\n    litellm_params: {model: openai/y}\n  - model_name: c\n    litellm_params: {model: openai/z}\nrouter_settings:\n  fallbacks: [{a: [b]}, {b: [c]}, {c: [a]}]\n",
			"fallbacks: fallback cycle: a -> b -> c -> a"},
		{"wildcard fallback cycle", "model_list:\n  - model_name: gpt-a\n    litellm_params: {model: openai/x}\n  - model_name: other\n    litellm_params: {model: openai/y}\nrouter_settings:\n  fallbacks: [{\"gpt-*\": [other]}, {other: [gpt-a]}]\n",
			"fallback cycle: gpt-a -> other -> gpt-a"},
		{"explicit self fallback", "model_list:\n  - model_name: a\n    litellm_params: {model: openai/x}\nrouter_settings:\n  fallbacks: [{a: [a]}]\n",
			"fallback cycle: a -> a"},
		{"master key env missing", "general_settings: {master_key: os.environ/NOPE}\n", "refusing to start an open gateway"},
		{"not yaml", "model_list: [\n", "YAML syntax"},
		{"list at root", "- a\n- b\n", "must be a mapping"},
		{"model_list not a list", "model_list: {a: b}\n", "model_list (line 1): must be a list"},
		{"duplicate id", "model_list:\n  - model_name: a\n    litellm_params: {model: openai/x}\n    model_info: {id: same}\n  - model_name: a\n    litellm_params: {model: openai/y}\n    model_info: {id: same}\n", `duplicate deployment id "same"`},
		{"huge retries", "model_list: []\nrouter_settings: {num_retries: 99999999999}\n", "router_settings.num_retries (line 2): must be at most 2147483647"},
		{"bad bool", "model_list:\n  - model_name: a\n    litellm_params: {model: openai/x}\n    model_info: {blocked: maybe}\n", "must be true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.yaml), env(nil))
			if err == nil {
				t.Fatalf("loaded; want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// Entries LiteLLM loads but the gateway cannot call are warnings naming the
// key, and the deployment is left out of routing with the reason (issue 20):
// never a refusal to start.
func TestUnusableDeploymentsNotFatal(t *testing.T) {
	y := `model_list:
  - model_name: a
    litellm_params: {model: openai/x}
  - model_name: typo
    litellm_params:
      model: opnai/gpt-4o
  - model_name: img
    litellm_params: {model: azure/, api_base: https://x.openai.azure.com}
  - model_name: vllm
    litellm_params: {model: hosted_vllm/llama}
`
	c, err := Load([]byte(y), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c,
		`model_list[1].litellm_params.model (line 6): unknown provider "opnai" (did you mean "openai"?): deployment "typo" is left out of routing`,
		`model_list[2].litellm_params.model (line 8): missing model name after "azure/"`,
		`model_list[3].litellm_params.api_base (line 10): api_base is required for provider "hosted_vllm"`,
	)
	for i, d := range c.Deployments {
		if i > 0 && (d.Implemented || d.Unusable == "") {
			t.Errorf("deployment %d should be left out with a reason: %+v", i, d)
		}
	}
}

// An Azure deployment without api_base, api_key or api_version reads
// AZURE_API_BASE, AZURE_API_KEY and AZURE_API_VERSION, as LiteLLM does; with
// no base anywhere it still loads (its calls fail, naming the variable).
func TestAzureEnvDefaults(t *testing.T) {
	y := "model_list:\n  - model_name: a\n    litellm_params: {model: azure/dep}\n  - model_name: b\n    litellm_params: {model: azure/dep2, api_base: https://own.example.com, api_key: own, api_version: v1}\n"
	c, err := Load([]byte(y), env(map[string]string{"AZURE_API_BASE": "https://env.example.com/", "AZURE_API_KEY": "envkey", "AZURE_API_VERSION": "2024-10-21"}))
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Deployments[0]; !d.Implemented || d.APIBase != "https://env.example.com" || d.APIKey != "envkey" || d.APIVersion != "2024-10-21" {
		t.Errorf("from the environment: %+v", d)
	}
	if d := c.Deployments[1]; d.APIBase != "https://own.example.com" || d.APIKey != "own" || d.APIVersion != "v1" {
		t.Errorf("the config's own values must win: %+v", d)
	}
	c, err = Load([]byte(y), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Deployments[0]; !d.Implemented || d.APIBase != "" {
		t.Errorf("without AZURE_API_BASE: %+v", d)
	}
	if len(c.Warnings) == 0 || !strings.Contains(c.Warnings[0].String(), "AZURE_API_BASE is not set") {
		t.Errorf("warnings = %v", c.Warnings)
	}
}

func TestWarningsNotFatal(t *testing.T) {
	y := `model_list:
  - model_name: a
    litellm_params:
      model: openai/x
      api_key: os.environ/MISSING
      organization: org-1
      temperature: 0.2
    model_info: {mode: chat, made_up: 1}
litellm_settings:
  success_callback: [langfuse, custom_callbacks.proxy_handler_instance]
  num_retries: 4
router_settings:
  num_retries: 1
  mystery_knob: 3
  retry_policy: {RateLimitErrorRetries: 5, BogusRetries: 1}
`
	c, err := Load([]byte(y), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	joined := wantWarnings(t, c,
		"model_list[0].litellm_params.api_key (line 5): environment variable MISSING is not set",
		"model_list[0].litellm_params.organization (line 6): not supported yet",
		"model_list[0].model_info.made_up",
		`litellm_settings.success_callback[1] (line 10): callback "custom_callbacks.proxy_handler_instance" is not implemented`,
		"litellm_settings.num_retries (line 11): overridden by router_settings.num_retries",
		"router_settings.mystery_knob (line 14): unknown key mystery_knob; ignored",
		"BogusRetries",
	)
	if strings.Contains(joined, "model_info.mode") {
		t.Errorf("informational model_info.mode should not warn:\n%s", joined)
	}
	if c.Router.NumRetries != 1 || c.Router.RetryPolicy["rate_limited"] != 5 {
		t.Errorf("router = %+v", c.Router)
	}
	if c.Deployments[0].Params["temperature"] != 0.2 {
		t.Errorf("params = %v", c.Deployments[0].Params)
	}
}

func TestDefaultConfig(t *testing.T) {
	c := Default()
	groups := map[string]int{}
	for _, d := range c.Deployments {
		if d.Protocol != ProtocolMock || !d.Implemented {
			t.Errorf("default deployment %s is not a mock", d.ID)
		}
		groups[d.ModelName]++
	}
	if len(groups) < 2 || groups["gpt-4o-mini"] != 2 {
		t.Fatalf("default groups = %v; want at least two groups, one with two deployments", groups)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("default config warns: %v", c.Warnings)
	}
}

func TestStableIDs(t *testing.T) {
	y := []byte("model_list:\n  - model_name: a\n    litellm_params: {model: openai/x, api_key: k1}\n")
	y2 := []byte("model_list:\n  - model_name: a\n    litellm_params: {model: openai/x, api_key: k2}\n")
	c1, _ := Load(y, nil)
	c2, _ := Load(y, nil)
	c3, _ := Load(y2, nil)
	if c1.Deployments[0].ID != c2.Deployments[0].ID || c1.Deployments[0].ID != c3.Deployments[0].ID {
		t.Fatal("deployment ids must be stable across loads and not depend on the key")
	}
}

func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		p, n string
		ok   bool
	}{
		{"*", "anything/at-all", true}, {"gpt-*", "gpt-4o", true}, {"gpt-*", "claude", false},
		{"openai/*", "openai/gpt-4o", true}, {"a*c*e", "abcde", true}, {"a*c", "abcd", false}, {"exact", "exact", true},
	} {
		if got := Match(tt.p, tt.n); got != tt.ok {
			t.Errorf("Match(%q,%q)=%v", tt.p, tt.n, got)
		}
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, err := LoadFile(filepath.Join(t.TempDir(), "nope.yaml"), nil)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

// A master_key naming an unset variable is fatal unless the environment
// brings the key another way (as the deployed template does, through SSM).
func TestMasterKeyEnvOverridden(t *testing.T) {
	const y = "general_settings: {master_key: os.environ/LITELLM_MASTER_KEY_UNSET}\n"
	if _, err := Load([]byte(y), env(nil)); err == nil || !strings.Contains(err.Error(), "refusing to start an open gateway") {
		t.Fatalf("no override: %v, want the refusal", err)
	}
	if _, err := Load([]byte(y), env(map[string]string{"GATEWAY_MASTER_KEY": ""})); err == nil {
		t.Fatal("an empty override was taken for a key")
	}
	for _, name := range MasterKeyOverrides {
		cfg, err := Load([]byte(y), env(map[string]string{name: "sk-or-a-parameter-name"}))
		if err != nil {
			t.Errorf("%s set: %v", name, err)
			continue
		}
		if cfg.General.MasterKey != "" {
			t.Errorf("%s set: master key %q, want it left to the override", name, cfg.General.MasterKey)
		}
	}
}

// MasterKeyOf, which reads the master key alone, finds the key Load
// finds: in every fixture config, and in each place a config may name it.
func TestMasterKeyOf(t *testing.T) {
	files, _ := filepath.Glob("testdata/litellm-configs/*.yaml")
	docs := []string{
		"general_settings: {master_key: sk-general}\nlitellm_settings: {master_key: sk-litellm}\n",
		"litellm_settings: {master_key: os.environ/LITELLM_MASTER_KEY}\n",
		"general_settings: {master_key: sk-a}\ngeneral_settings: {master_key: sk-b}\n",
		"model_list: []\n",
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	named := 0
	for _, y := range docs {
		cfg, err := Load([]byte(y), fixtureEnv)
		if err != nil {
			continue // Load's refusals are other tests'
		}
		if got := MasterKeyOf([]byte(y), fixtureEnv); got != cfg.General.MasterKey {
			t.Errorf("MasterKeyOf = %q, Load read %q, of:\n%.200s", got, cfg.General.MasterKey, y)
		}
		if cfg.General.MasterKey != "" {
			named++
		}
	}
	if named < 4 {
		t.Errorf("only %d configs named a master key", named)
	}
	if got := MasterKeyOf([]byte("general_settings: {master_key: os.environ/UNSET}\n"), fixtureEnv); got != "" {
		t.Errorf("unresolved: %q", got)
	}
}

// TestAccessGroupsAndRegions: model_info.access_groups index the model
// groups by access group at load; region_name, aws_region_name and an Azure
// api_base host give a deployment's region.
func TestAccessGroupsAndRegions(t *testing.T) {
	cfg, err := Load([]byte(`model_list:
  - model_name: a
    litellm_params: {model: mock/a, region_name: EU}
    model_info: {access_groups: [beta, beta, prod]}
  - model_name: b
    litellm_params: {model: bedrock/anthropic.claude-3, aws_region_name: eu-central-1}
    model_info: {access_groups: [beta]}
  - model_name: b
    litellm_params: {model: bedrock/anthropic.claude-3, aws_region_name: us-west-2}
    model_info: {access_groups: [beta]}
  - model_name: c
    litellm_params: {model: azure/gpt-4o, api_base: "https://acme-swedencentral.openai.azure.com", api_key: k, api_version: "2024-06-01"}
  - model_name: d
    litellm_params: {model: azure/gpt-4o, api_base: "https://acme-eastus2.openai.azure.com", api_key: k, api_version: "2024-06-01"}
  - model_name: e
    litellm_params: {model: azure/gpt-4o, api_base: "https://business.openai.azure.com", api_key: k, api_version: "2024-06-01"}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"beta": {"a", "b"}, "prod": {"a"}}
	if !reflect.DeepEqual(cfg.AccessGroups, want) {
		t.Fatalf("AccessGroups %v, want %v", cfg.AccessGroups, want)
	}
	if got := cfg.Deployments[0].AccessGroups; !reflect.DeepEqual(got, []string{"beta", "prod"}) {
		t.Fatalf("deployment access groups %v", got)
	}
	var regions []string
	for _, d := range cfg.Deployments {
		regions = append(regions, d.Region)
	}
	if want := []string{"eu", "eu", "us", "eu", "us", ""}; !reflect.DeepEqual(regions, want) {
		t.Fatalf("regions %q, want %q", regions, want)
	}
	for _, w := range cfg.Warnings {
		if strings.Contains(w.Path, "access_groups") || strings.Contains(w.Path, "region_name") {
			t.Fatalf("warned: %s", w)
		}
	}
	none, err := Load([]byte("model_list:\n  - model_name: a\n    litellm_params: {model: mock/a}\n"), nil)
	if err != nil || none.AccessGroups != nil {
		t.Fatalf("no access groups: %v, %v", none.AccessGroups, err)
	}
}

// No config that names a master key starts open (issue 29): master_key is
// read from general_settings, else from litellm_settings (LiteLLM's Claude
// Code quickstart puts it there), and one that resolves to nothing stops
// the start, naming its path and variable. Only a config naming none loads
// without a key.
func TestMasterKeyPlaces(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        map[string]string
		key        string // the config's master key
		err        []string
		warning    string // a warning that must be given
	}{
		{name: "none named: open", yaml: "litellm_settings: {drop_params: true}\n"},
		{name: "litellm_settings", yaml: "litellm_settings: {master_key: sk-lit}\n", key: "sk-lit"},
		{name: "litellm_settings from the environment", yaml: "litellm_settings: {master_key: os.environ/MK}\n", env: map[string]string{"MK": "sk-env"}, key: "sk-env"},
		{name: "general_settings wins", yaml: "general_settings: {master_key: sk-gen}\nlitellm_settings: {master_key: sk-lit}\n", key: "sk-gen",
			warning: "litellm_settings.master_key (line 2): overridden by general_settings.master_key"},
		{name: "quickstart, variable unset", yaml: "litellm_settings:\n  master_key: os.environ/LITELLM_MASTER_KEY\n",
			err: []string{"litellm_settings.master_key (line 2)", "environment variable LITELLM_MASTER_KEY is not set", "refusing to start an open gateway"}},
		{name: "quickstart, variable set: the environment's key replaces it", yaml: "litellm_settings:\n  master_key: os.environ/LITELLM_MASTER_KEY\n",
			env: map[string]string{"LITELLM_MASTER_KEY": "sk-env"}, key: "sk-env"},
		{name: "litellm_settings, variable empty", yaml: "litellm_settings: {master_key: os.environ/MK}\n", env: map[string]string{"MK": ""},
			err: []string{"litellm_settings.master_key", "environment variable MK is empty"}},
		{name: "general_settings, variable empty", yaml: "general_settings: {master_key: os.environ/MK}\n", env: map[string]string{"MK": ""},
			err: []string{"general_settings.master_key", "environment variable MK is empty", "refusing to start an open gateway"}},
		{name: "general_settings empty", yaml: "general_settings: {master_key: \"\"}\n", err: []string{"general_settings.master_key", "the master key is empty"}},
		{name: "litellm_settings null", yaml: "litellm_settings: {master_key: null}\n", err: []string{"litellm_settings.master_key", "the master key is empty"}},
		{name: "general_settings unset even when litellm_settings has one", yaml: "general_settings: {master_key: os.environ/MK}\nlitellm_settings: {master_key: sk-lit}\n",
			err: []string{"general_settings.master_key", "environment variable MK is not set"}},
		{name: "an override in the environment", yaml: "litellm_settings: {master_key: os.environ/MK}\n", env: map[string]string{"GATEWAY_MASTER_KEY_PARAMETER": "/sluice/master"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load([]byte(tc.yaml), env(tc.env))
			if len(tc.err) > 0 {
				if err == nil {
					t.Fatalf("loaded (master key %q), want a refusal", cfg.General.MasterKey)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.General.MasterKey != tc.key {
				t.Errorf("master key %q, want %q", cfg.General.MasterKey, tc.key)
			}
			var ws []string
			for _, w := range cfg.Warnings {
				ws = append(ws, w.String())
				if strings.HasPrefix(w.Path, "litellm_settings.master_key") && strings.Contains(w.Message, "ignored") {
					t.Errorf("master_key reported as ignored: %s", w)
				}
			}
			if tc.warning != "" && !slices.Contains(ws, tc.warning) {
				t.Errorf("warnings %q lack %q", ws, tc.warning)
			}
		})
	}
}

// TestCallbacks reads litellm_settings' callbacks: the lists keep the
// implemented names, the others are warned about; the settings read.
func TestCallbacks(t *testing.T) {
	y := `
model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_key: k}
litellm_settings:
  success_callback: [Langfuse, s3]
  failure_callback: [langfuse, prometheus]
  callbacks: generic_api
  turn_off_message_logging: true
  redact_user_api_key_info: true
  s3_callback_params:
    s3_bucket_name: logs
    s3_aws_secret_access_key: os.environ/S3_SECRET
`
	c, err := Load([]byte(y), env(map[string]string{"S3_SECRET": "shh"}))
	if err != nil {
		t.Fatal(err)
	}
	cb := c.Callbacks
	if strings.Join(cb.Success, ",") != "langfuse,s3" || strings.Join(cb.Failure, ",") != "langfuse" || strings.Join(cb.Both, ",") != "generic_api" {
		t.Errorf("lists = %v %v %v", cb.Success, cb.Failure, cb.Both)
	}
	if !cb.TurnOffMessageLogging || !cb.RedactUserAPIKeyInfo || cb.LogContent() {
		t.Errorf("settings = %+v", cb)
	}
	if cb.S3["s3_bucket_name"] != "logs" || cb.S3["s3_aws_secret_access_key"] != "shh" {
		t.Errorf("s3 params = %v", cb.S3)
	}
	if got := strings.Join(cb.Names(), ","); got != "generic_api,langfuse,s3" {
		t.Errorf("names = %s", got)
	}
	var warned bool
	for _, w := range c.Warnings {
		warned = warned || strings.Contains(w.String(), `"prometheus" is not implemented`)
	}
	if !warned {
		t.Errorf("no warning for prometheus: %v", c.Warnings)
	}
	dir := t.TempDir()
	path := dir + "/c.yaml"
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	only, _, err := LoadCallbacksFile(path, env(map[string]string{"S3_SECRET": "shh"}))
	if err != nil || !reflect.DeepEqual(only, cb) {
		t.Errorf("LoadCallbacksFile = %+v, %v; want %+v", only, err, cb)
	}
}
