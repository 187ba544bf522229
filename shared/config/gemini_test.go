package config

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/catalog"
)

// A gemini/ deployment routes (it is no longer left out), takes Google AI
// Studio's base with its version when it sets none, and reads
// GEMINI_API_KEY when it has no api_key, as LiteLLM does (the name kept,
// so a key from the secrets rotates); its own values win.
func TestGeminiDeployments(t *testing.T) {
	y := "model_list:\n  - model_name: a\n    litellm_params: {model: gemini/gemini-2.5-flash}\n" +
		"  - model_name: b\n    litellm_params: {model: gemini/gemini-2.5-pro, api_base: https://gateway.ai.cloudflare.com/v1/acc/gw/google-ai-studio/v1beta, api_key: own}\n"
	c, err := Load([]byte(y), env(map[string]string{"GEMINI_API_KEY": "envkey"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings %v", c.Warnings)
	}
	d := c.Deployments[0]
	if !d.Implemented || d.Protocol != catalog.Gemini || d.APIBase != "https://generativelanguage.googleapis.com/v1beta" ||
		d.APIKey != "envkey" || d.APIKeyEnv != GeminiKeyEnv {
		t.Errorf("from the environment: %+v", d)
	}
	if d := c.Deployments[1]; d.APIBase != "https://gateway.ai.cloudflare.com/v1/acc/gw/google-ai-studio/v1beta" || d.APIKey != "own" || d.APIKeyEnv != "" {
		t.Errorf("the config's own values must win: %+v", d)
	}
}
