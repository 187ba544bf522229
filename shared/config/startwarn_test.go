package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config whose aliases and fallbacks name groups that do not exist
// starts, as LiteLLM's does: each is warned at its line, with the closest
// group, and left out (issue 31).
func TestUnknownGroupsWarnAndStart(t *testing.T) {
	y := `model_list:
  - model_name: gpt-4o
    litellm_params: {model: openai/gpt-4o}
  - model_name: claude
    litellm_params: {model: anthropic/claude-sonnet-4-5}
router_settings:
  model_group_alias:
    fast: gpt4o
    smart: {model: claude, hidden: true}
    gone: {model: nowhere, hidden: true}
  fallbacks:
    - gpt-4o: [claud, claude]
    - claude: [missing]
  context_window_fallbacks: [{gpt-4o: [nope]}]
  content_policy_fallbacks: [{claude: [gpt-4o]}]
  default_fallbacks: [gpt-4o, ghost]
`
	c, err := Load([]byte(y), env(nil))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	wantWarnings(t, c,
		`router_settings.model_group_alias.fast (line 8): unknown model group "gpt4o" (did you mean "gpt-4o"?); this alias is left out`,
		`router_settings.model_group_alias.gone.model (line 10): unknown model group "nowhere"; this alias is left out`,
		`router_settings.fallbacks[0].gpt-4o[0] (line 12): unknown model group "claud" (did you mean "claude"?); this fallback is left out`,
		`router_settings.fallbacks[1].claude[0] (line 13): unknown model group "missing"`,
		`router_settings.context_window_fallbacks[0].gpt-4o[0] (line 14): unknown model group "nope"`,
		`router_settings.default_fallbacks[1] (line 16): unknown model group "ghost"`,
	)
	r := c.Router
	if len(r.ModelGroupAlias) != 1 || r.ModelGroupAlias["smart"] != "claude" || !r.HiddenAliases["smart"] || r.HiddenAliases["gone"] {
		t.Errorf("aliases = %v hidden %v; want only smart -> claude", r.ModelGroupAlias, r.HiddenAliases)
	}
	if len(r.Fallbacks) != 1 || r.Fallbacks[0].From != "gpt-4o" || strings.Join(r.Fallbacks[0].To, ",") != "claude" {
		t.Errorf("fallbacks = %+v; want gpt-4o -> [claude]", r.Fallbacks)
	}
	if len(r.ContextWindowFallbacks) != 0 || len(r.ContentPolicyFallbacks) != 1 || strings.Join(r.DefaultFallbacks, ",") != "gpt-4o" {
		t.Errorf("context %+v content %+v default %v", r.ContextWindowFallbacks, r.ContentPolicyFallbacks, r.DefaultFallbacks)
	}
}

// Config mistakes get messages that say what is wrong and where (issue 31).
func TestConfigMistakeMessages(t *testing.T) {
	t.Run("top-level typos warn with did-you-mean", func(t *testing.T) {
		y := "model_lsit:\n  - model_name: a\nrouter_setings: {num_retries: 1}\nlitellm_settings: {drop_parms: true}\ngeneral_settings: {master_kye: sk-1}\nzzz_unrelated: 1\n"
		c, err := Load([]byte(y), env(nil))
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		wantWarnings(t, c,
			"model_lsit (line 1): unknown key model_lsit (did you mean model_list?); ignored",
			"router_setings (line 3): unknown key router_setings (did you mean router_settings?); ignored",
			"general_settings.master_kye (line 5): unknown key master_kye (did you mean master_key?); ignored",
			"zzz_unrelated (line 6): unknown key zzz_unrelated; ignored",
		)
	})
	refused := []struct{ name, yaml, want string }{
		{"litellm_parms", "model_list:\n  - model_name: a\n    litellm_parms:\n      model: openai/x\n",
			"model_list[0].litellm_parms (line 3): unknown key litellm_parms (did you mean litellm_params?)"},
		{"model_nmae", "model_list:\n  - model_nmae: a\n    litellm_params: {model: openai/x}\n",
			"model_list[0].model_nmae (line 2): unknown key model_nmae (did you mean model_name?)"},
		{"modle", "model_list:\n  - model_name: a\n    litellm_params:\n      api_key: k\n      modle: openai/x\n",
			"model_list[0].litellm_params.modle (line 5): unknown key modle (did you mean model?)"},
		{"indentation", "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/gpt-4o\n     api_key: x\nrouter_settings:\n  num_retries: 2\n",
			"YAML syntax (line 5): column 6:"},
		{"list item indentation", "model_list:\n  - model_name: a\n    litellm_params: {model: openai/x}\n  - model_name: b\n   litellm_params:\n      model: openai/y\n",
			"YAML syntax (line 5): column 4:"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.yaml), env(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
	t.Run("litellm_params key typo warns with did-you-mean", func(t *testing.T) {
		c, err := Load([]byte("model_list:\n  - model_name: a\n    litellm_params: {model: openai/x, api_bsae: 'http://h', temperture: 1}\n"), env(nil))
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		wantWarnings(t, c, "unknown key api_bsae (did you mean api_base?)", "unknown key temperture (did you mean temperature?)")
	})
}

// LiteLLM's complete-schema example, as its docs print it, writes two
// router_settings lines as Python (content_policy_fallbacks=[...]): no
// YAML parser reads that (PyYAML, LiteLLM's, stops at line 163 too), and the
// error names that line, not the block's first. testdata's copy has the two
// lines as YAML (TestLiteLLMConfigsLoad loads it).
func TestDocsExampleSyntaxErrorLine(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "litellm", "config_settings_complete.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	verbatim := strings.NewReplacer(`  content_policy_fallbacks: [{"claude-2"`, `  content_policy_fallbacks=[{"claude-2"`,
		`  fallbacks: [{"claude-2"`, `  fallbacks=[{"claude-2"`).Replace(string(b))
	if verbatim == string(b) {
		t.Fatal("the two lines were not found")
	}
	_, err = Load([]byte(verbatim), env(nil))
	if err == nil || !strings.Contains(err.Error(), "YAML syntax (line 163)") {
		t.Fatalf("error = %v; want YAML syntax (line 163)", err)
	}
}

// Every key LiteLLM documents (docs/proxy/config_settings.md, the lists of
// documented.go) that the gateway does not implement loads with a warning
// naming it as not supported or ignored, never as unknown, and never stops
// the start (issue 31).
func TestDocumentedKeysWarn(t *testing.T) {
	implemented := map[string]bool{"drop_params": true}
	for _, k := range implementedRouter {
		implemented[k] = true
	}
	var b strings.Builder
	section := func(name string, keys []string) {
		if name != "" {
			b.WriteString(name + ":\n")
		}
		for _, k := range keys {
			if implemented[k] || k == "callback_settings" && name != "" {
				continue
			}
			if name != "" {
				b.WriteString("  ")
			}
			b.WriteString(k + ": 1\n")
		}
	}
	section("", documentedTop)
	section("general_settings", documentedGeneral)
	section("litellm_settings", documentedLiteLLM)
	section("router_settings", documentedRouter)
	c, err := Load([]byte(b.String()), env(nil))
	if err != nil {
		t.Fatalf("load: %v\n%s", err, b.String())
	}
	n := 0
	for _, w := range c.Warnings {
		if strings.Contains(w.Message, "unknown key") {
			t.Errorf("a documented key is called unknown: %s", w)
		}
		if strings.Contains(w.Message, "ignored") {
			n++
		}
	}
	if n < 100 {
		t.Errorf("%d keys warned as ignored; want each documented key", n)
	}
}

// wantWarnings fails t unless each of wants is in one of c's warnings; it
// returns the warnings, one a line.
func wantWarnings(t *testing.T, c *Config, wants ...string) string {
	t.Helper()
	var all strings.Builder
	for _, w := range c.Warnings {
		all.WriteString(w.String() + "\n")
	}
	for _, want := range wants {
		if !strings.Contains(all.String(), want) {
			t.Errorf("warnings lack %q; got:\n%s", want, all.String())
		}
	}
	return all.String()
}
