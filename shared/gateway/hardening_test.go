package gateway

import (
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/wire"
)

const mockYAML = `model_list:
  - model_name: gpt-4o-mini
    litellm_params: {model: mock/gpt-4o-mini}
general_settings: {master_key: sk-master}
`

// TestDeepBody: a body nested deeper than wire.MaxDepth is a 400 (not a
// crash of the process); one at the bound is served.
func TestDeepBody(t *testing.T) {
	f := newFixture(t, mockYAML, nil)
	for _, tt := range []struct {
		name   string
		body   string
		status int
	}{
		{"unbalanced, under the body limit", `{"model":"gpt-4o-mini","x":` + strings.Repeat("[", 1<<20-100), 400},
		{"balanced, one level over", `{"model":"gpt-4o-mini","x":` + strings.Repeat("[", wire.MaxDepth) + strings.Repeat("]", wire.MaxDepth) + `}`, 400},
		{"at the bound", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"x":` + strings.Repeat("[", wire.MaxDepth-1) + strings.Repeat("]", wire.MaxDepth-1) + `}`, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.post(t, "/v1/chat/completions", "sk-master", tt.body)
			out := readAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tt.status, out)
			}
			if tt.status == 400 {
				if msg, typ, _ := openAIError(t, out); typ != "invalid_request_error" || !strings.Contains(msg, "deeper than") {
					t.Fatalf("error %s: %s", typ, msg)
				}
			}
		})
	}
}
