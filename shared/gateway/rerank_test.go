package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/wire"
)

const cohereRerank = `{"id":"r-1","results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.1}],"meta":{"billed_units":{"search_units":2}}}`

// A Cohere-style rerank passes through to an OpenAI-compatible deployment at
// /v1/rerank and /rerank, the model rewritten and the body otherwise as
// sent, and is priced per search unit the answer reports (rerank-v3.5:
// $0.002 each).
func TestRerankPassThrough(t *testing.T) {
	s, url := recordingUpstream(t, "application/json", cohereRerank)
	f := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: rr
    litellm_params: {model: openai/rerank-v3.5, api_base: %s/v1, api_key: sk-up}
`, url), nil)
	for _, path := range []string{"/v1/rerank", "/rerank"} {
		resp := f.post(t, path, "", `{"model":"rr","query":"capital of France?","documents":["Berlin","Paris"],"top_n":1}`)
		out := gatewaytest.ReadAll(t, resp.Body)
		if resp.StatusCode != 200 || out != cohereRerank {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, out)
		}
		if s.path != "/v1/rerank" || s.model != "rerank-v3.5" || !strings.Contains(string(s.body), `"documents":["Berlin","Paris"],"top_n":1`) {
			t.Errorf("%s: upstream %s model %q body %s", path, s.path, s.model, s.body)
		}
		c := f.completion(t, resp)
		if c.Operation != wire.OpRerank || !c.CostKnown || c.CostNanos != 4_000_000 {
			t.Errorf("%s: op %v cost %d known %v, want rerank at 2 x $0.002", path, c.Operation, c.CostNanos, c.CostKnown)
		}
		if got := resp.Header.Get("X-Litellm-Response-Cost"); got != "0.004" {
			t.Errorf("%s: cost header %q", path, got)
		}
	}
}

// A rerank model without a per-query price is priced by the tokens its
// answer reports (Jina's usage) at the deployment's token price; with
// neither, its cost is unknown, never $0. A provider that does not serve
// rerank (Anthropic) is a 400.
func TestRerankUnpricedAndUnsupported(t *testing.T) {
	_, url := recordingUpstream(t, "application/json", `{"model":"jina-reranker-v2","usage":{"total_tokens":50,"prompt_tokens":50},"results":[{"index":0,"relevance_score":0.5}]}`)
	f := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: jina
    litellm_params: {model: openai/jina-reranker-v2, api_base: %[1]s, input_cost_per_token: 0.00000002, output_cost_per_token: 0}
  - model_name: free
    litellm_params: {model: openai/my-reranker, api_base: %[1]s}
  - model_name: claude
    litellm_params: {model: anthropic/claude-3-5-haiku-latest, api_key: k}
`, url), nil)
	resp := f.post(t, "/v1/rerank", "", `{"model":"jina","query":"q","documents":["a"]}`)
	gatewaytest.ReadAll(t, resp.Body)
	if c := f.completion(t, resp); resp.StatusCode != 200 || !c.CostKnown || c.CostNanos != 1000 || c.Usage.PromptTokens != 50 {
		t.Errorf("jina: %d cost %d known %v usage %+v", resp.StatusCode, c.CostNanos, c.CostKnown, c.Usage)
	}
	_, url2 := recordingUpstream(t, "application/json", cohereRerank)
	f2 := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: free
    litellm_params: {model: openai/my-reranker, api_base: %s}
  - model_name: claude
    litellm_params: {model: anthropic/claude-3-5-haiku-latest, api_key: k}
`, url2), nil)
	resp = f2.post(t, "/rerank", "", `{"model":"free","query":"q","documents":["a"]}`)
	gatewaytest.ReadAll(t, resp.Body)
	if c := f2.completion(t, resp); resp.StatusCode != 200 || c.CostKnown {
		t.Errorf("unpriced reranker: %d cost %d known %v", resp.StatusCode, c.CostNanos, c.CostKnown)
	}
	resp = f2.post(t, "/v1/rerank", "", `{"model":"claude","query":"q","documents":["a"]}`)
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 400 || !strings.Contains(out, "does not serve /rerank") {
		t.Errorf("anthropic: %d %s", resp.StatusCode, out)
	}
}
