package providers

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

// The pass-through operations reach OpenAI-compatible and Azure deployments
// only; a translating vendor, or a mock_response deployment asked for
// anything but chat, text completions or embeddings, is a 400, never a chat
// answer in an image's place.
func TestUnsupportedOps(t *testing.T) {
	cfg, err := config.Load([]byte(`model_list:
  - model_name: claude
    litellm_params: {model: anthropic/claude-3-5-haiku-20241022, api_key: k}
  - model_name: mocked
    litellm_params: {model: openai/gpt-4o, mock_response: "hi"}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	claude, mocked := cfg.Deployments[0], cfg.Deployments[1]
	d := New(nil)
	for _, tt := range []struct {
		dep  *config.Deployment
		op   wire.Op
		want string // "" = served
	}{
		{claude, wire.OpCompletions, "does not serve /completions"},
		{claude, wire.OpImages, "does not serve /images/generations"},
		{mocked, wire.OpImages, "serves chat, text completions and embeddings only"},
		{mocked, wire.OpCompletions, ""},
	} {
		resp, err := d.Do(context.Background(), tt.dep, wire.Call{Op: tt.op, Body: []byte(`{"model":"x","prompt":"p"}`)})
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s %s: %v", tt.dep.ModelName, tt.op, err)
			} else {
				resp.Body.Close()
			}
			continue
		}
		if apierr.KindOf(err) != apierr.InvalidRequest || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s: %v, want a 400 saying %q", tt.dep.ModelName, tt.op, err, tt.want)
		}
	}
}
