package config

import (
	"strings"
	"testing"
)

// litellm_settings.drop_params applies to every deployment (no "ignored"
// warning any more); a deployment's own litellm_params.drop_params wins.
func TestDropParams(t *testing.T) {
	const yaml = `
model_list:
  - model_name: a
    litellm_params: {model: anthropic/claude-sonnet-4-20250514, api_key: k}
  - model_name: b
    litellm_params: {model: anthropic/claude-sonnet-4-20250514, api_key: k, drop_params: false}
litellm_settings:
  drop_params: true
`
	c, err := Load([]byte(yaml), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Deployments[0].DropParams || c.Deployments[1].DropParams {
		t.Fatalf("DropParams = %v, %v; want true, false", c.Deployments[0].DropParams, c.Deployments[1].DropParams)
	}
	for _, w := range c.Warnings {
		if strings.Contains(w.Path, "drop_params") {
			t.Fatalf("warning %+v", w)
		}
	}
	c, err = Load([]byte("model_list:\n  - model_name: a\n    litellm_params: {model: anthropic/x, api_key: k}\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Deployments[0].DropParams {
		t.Fatal("DropParams on by default")
	}
	if _, err := Load([]byte("model_list: []\nlitellm_settings:\n  drop_params: maybe\n"), env(nil)); err == nil {
		t.Fatal("drop_params: maybe accepted")
	}
}
