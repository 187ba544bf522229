package router

import (
	"context"
	"testing"
)

// Overlapping wildcard groups: the most specific serves, whatever the order
// of the file (LiteLLM's pattern router sorts its patterns by specificity).
func TestWildcardSpecificityNotFileOrder(t *testing.T) {
	for _, order := range []string{"catch-all first", "catch-all last"} {
		t.Run(order, func(t *testing.T) {
			star := `
  - model_name: "*"
    litellm_params: {model: "openai/*", api_key: k}
    model_info: {id: star}`
			oai := `
  - model_name: "openai/*"
    litellm_params: {model: "openai/*", api_key: k}
    model_info: {id: oai}
  - model_name: "openai/gpt-4o*"
    litellm_params: {model: "openai/*", api_key: k}
    model_info: {id: oai-4o}`
			list := star + oai
			if order == "catch-all last" {
				list = oai + star
			}
			rt := testRouter(t, load(t, "model_list:"+list+"\n"), Options{})
			for model, want := range map[string]string{
				"openai/gpt-4.1":      "oai",
				"openai/gpt-4o-mini":  "oai-4o",
				"anthropic/claude-3":  "star",
				"gpt-4o-not-prefixed": "star",
			} {
				s := newScript(nil)
				if _, err := rt.Do(context.Background(), req(model), s.fn); err != nil {
					t.Fatalf("%s: %v", model, err)
				}
				if got := s.attempts[0].Deployment.ID; got != want {
					t.Errorf("%s served by %s, want %s", model, got, want)
				}
			}
		})
	}
}
