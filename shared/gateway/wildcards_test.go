package gateway

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/pricing"
)

// wildcardFixture serves yaml with the embedded price table (which lists
// each provider's known models).
func wildcardFixture(t *testing.T, yaml string, env map[string]string) *fixture {
	t.Helper()
	cfg, err := config.Load([]byte(yaml), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.ResolvePrices(pricing.Default())
	return serve(t, testHandler(Options{Config: cfg, Prices: pricing.Default(), MaxBody: 1 << 20}))
}

// Wildcard deployments are expanded, as LiteLLM expands them, in
// /v1/models and /model_group/info: "anthropic/*" into the table's
// Anthropic models ("anthropic/<model>"), "*" served by "openai/*" into
// OpenAI's; a model another group serves stays that group's (issue 31).
func TestWildcardGroupsExpanded(t *testing.T) {
	f := wildcardFixture(t, `model_list:
  - model_name: "anthropic/*"
    litellm_params: {model: "anthropic/*", api_key: k}
  - model_name: "*"
    litellm_params: {model: "openai/*", api_key: k}
  - model_name: gpt-4o
    litellm_params: {model: openai/gpt-4o, api_key: k}
`, nil)
	var list struct {
		Data []struct{ ID, OwnedBy string }
	}
	if code := f.get(t, "/v1/models", "", &list); code != 200 {
		t.Fatalf("/v1/models: %d", code)
	}
	ids := map[string]int{}
	for _, m := range list.Data {
		ids[m.ID]++
	}
	for _, want := range []string{"anthropic/claude-3-5-sonnet-20241022", "gpt-4o-mini", "gpt-4o"} {
		if ids[want] != 1 {
			t.Errorf("/v1/models lists %q %d times; want once (%d models)", want, ids[want], len(list.Data))
		}
	}
	if ids["claude-3-5-sonnet-20241022"] != 0 || ids["anthropic/gpt-4o"] != 0 {
		t.Errorf("a model under the wrong group: %v", ids)
	}
	var info struct {
		Data []struct {
			ModelGroup        string   `json:"model_group"`
			Providers         []string `json:"providers"`
			InputCostPerToken *float64 `json:"input_cost_per_token"`
		}
	}
	if code := f.get(t, "/model_group/info?model_group=anthropic/claude-3-5-sonnet-20241022", "", &info); code != 200 || len(info.Data) != 1 {
		t.Fatalf("/model_group/info: %d %+v", code, info)
	}
	if g := info.Data[0]; !slices.Equal(g.Providers, []string{"anthropic"}) || g.InputCostPerToken == nil || *g.InputCostPerToken <= 0 {
		t.Errorf("entry = %+v; want anthropic with the table's price", g)
	}
}

// A "*" deployment (model "*", no provider) chooses each request's provider
// from its model's name, as LiteLLM does: claude-* to Anthropic (its
// Messages API, ANTHROPIC_API_KEY), gpt-* to OpenAI (OPENAI_API_KEY); and
// /v1/models lists the known models of the providers it holds a key for
// (issue 31).
func TestStarDeploymentChoosesProvider(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // path -> key header
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen[r.URL.Path] = r.Header.Get("X-Api-Key") + r.Header.Get("Authorization")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/messages") {
			io.WriteString(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`)
			return
		}
		io.WriteString(w, completion)
	})
	f := wildcardFixture(t, fmt.Sprintf(`model_list:
  - model_name: "*"
    litellm_params: {model: "*", api_base: %q}
`, up.URL), map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "sk-oai"})
	for model, path := range map[string]string{"claude-3-5-sonnet-20241022": "/v1/messages", "claude-future-9": "/v1/messages", "gpt-4o": "/chat/completions"} {
		resp := f.post(t, "/v1/chat/completions", "", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
		if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 200 {
			t.Errorf("%s: status %d: %s", model, resp.StatusCode, out)
		}
		mu.Lock()
		key, ok := seen[path]
		delete(seen, path)
		mu.Unlock()
		want := "sk-ant"
		if path == "/chat/completions" {
			want = "Bearer sk-oai"
		}
		if !ok || key != want {
			t.Errorf("%s: upstream %s called %v with key %q, want %q", model, path, ok, key, want)
		}
	}
	var list struct{ Data []struct{ ID string } }
	f.get(t, "/v1/models", "", &list)
	var names []string
	for _, m := range list.Data {
		names = append(names, m.ID)
	}
	if !slices.Contains(names, "claude-3-5-sonnet-20241022") || !slices.Contains(names, "gpt-4o") {
		t.Errorf("/v1/models = %v; want the Anthropic and OpenAI models", names)
	}
}
