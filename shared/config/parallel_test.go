package config

import (
	"strings"
	"testing"
)

// litellm_params.max_parallel_requests: absent or null is no bound, 0 a
// bound admitting none, a negative or fractional number an error.
func TestMaxParallel(t *testing.T) {
	const y = "general_settings: {master_key: sk-x}\nmodel_list:\n" +
		"  - model_name: a\n    litellm_params: {model: openai/x, max_parallel_requests: 3}\n" +
		"  - model_name: b\n    litellm_params: {model: openai/y, max_parallel_requests: 0}\n" +
		"  - model_name: c\n    litellm_params: {model: openai/z, max_parallel_requests: null}\n" +
		"  - model_name: d\n    litellm_params: {model: openai/w}\n"
	cfg, err := Load([]byte(y), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range cfg.Deployments {
		got[d.ModelName] = "nil"
		if d.MaxParallel != nil {
			got[d.ModelName] = string(rune('0' + *d.MaxParallel))
		}
	}
	if got["a"] != "3" || got["b"] != "0" || got["c"] != "nil" || got["d"] != "nil" {
		t.Errorf("max_parallel_requests read as %v", got)
	}
	for _, w := range cfg.Warnings {
		if strings.Contains(w.String(), "max_parallel_requests") {
			t.Errorf("warning %s", w)
		}
	}
	for _, bad := range []string{"-1", "1.5", "lots"} {
		y := "general_settings: {master_key: sk-x}\nmodel_list:\n  - model_name: a\n    litellm_params: {model: openai/x, max_parallel_requests: " + bad + "}\n"
		if _, err := Load([]byte(y), env(nil)); err == nil || !strings.Contains(err.Error(), "max_parallel_requests") {
			t.Errorf("max_parallel_requests %s: %v, want an error naming it", bad, err)
		}
	}
}
