package config

import (
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/pricing"
)

func TestPriceKeys(t *testing.T) {
	c, err := Load([]byte(`
model_list:
  - model_name: a
    litellm_params:
      model: openai/custom
      input_cost_per_token: 0.000001
      output_cost_per_token: 0.000002
      cache_read_input_token_cost: 0.0000001
      cache_creation_input_token_cost: 0.00000125
    model_info: {input_cost_per_token: 0.5, max_output_tokens: 4096}
  - model_name: b
    litellm_params: {model: deepseek/deepseek-chat, input_cost_per_token_cache_hit: 0.00000007}
    model_info: {input_cost_per_token: 0.00000027, output_cost_per_token: 0.0000011}
  - model_name: free
    litellm_params: {model: hosted_vllm/llama, api_base: "http://vllm:8000/v1", input_cost_per_token: 0, output_cost_per_token: 0}
  - model_name: azure
    litellm_params: {model: azure/prod-deployment, api_base: "https://x.openai.azure.com", api_version: "2024-10-21"}
    model_info: {base_model: azure/gpt-4o-mini}
  - model_name: none
    litellm_params: {model: openai/gpt-4o}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Warnings {
		t.Errorf("unexpected warning: %s", w)
	}
	a, b, free, az, none := c.Deployments[0], c.Deployments[1], c.Deployments[2], c.Deployments[3], c.Deployments[4]
	if !a.PriceSet || a.InputCostPerToken != 1e-6 || a.OutputCostPerToken != 2e-6 || a.CacheReadCostPerToken != 1e-7 ||
		a.CacheWriteCostPerToken != 1.25e-6 || a.MaxOutputTokens != 4096 {
		t.Errorf("litellm_params prices (model_info does not override them): %+v", a)
	}
	if a.Price == nil || *a.Price != (pricing.Price{Input: 1e-6, Output: 2e-6, CacheRead: 1e-7, CacheWrite: 1.25e-6, MaxOutput: 4096}) {
		t.Errorf("config price resolved at load: %+v", a.Price)
	}
	if !b.PriceSet || b.InputCostPerToken != 2.7e-7 || b.OutputCostPerToken != 1.1e-6 || b.CacheReadCostPerToken != 7e-8 {
		t.Errorf("model_info prices and input_cost_per_token_cache_hit: %+v", b)
	}
	if !free.PriceSet || free.Price == nil || *free.Price != (pricing.Price{}) {
		t.Errorf("an explicit 0 is a price: %+v", free)
	}
	if az.PriceSet || az.Price != nil || az.BaseModel != "azure/gpt-4o-mini" {
		t.Errorf("base_model: %+v", az)
	}
	if none.PriceSet || none.Price != nil {
		t.Errorf("no price keys, no table yet: %+v", none.Price)
	}
}

func TestPriceKeyErrors(t *testing.T) {
	for _, tt := range []struct{ params, want string }{
		{"{model: openai/x, input_cost_per_token: -1}", "model_list[0].litellm_params.input_cost_per_token (line 3): must not be negative"},
		{"{model: openai/x, cache_read_input_token_cost: cheap}", `model_list[0].litellm_params.cache_read_input_token_cost (line 3): must be a number, got "cheap"`},
	} {
		_, err := Load([]byte("model_list:\n  - model_name: m\n    litellm_params: "+tt.params+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.params, err, tt.want)
		}
	}
}

func TestResolvePrices(t *testing.T) {
	c, err := Load([]byte(`
model_list:
  - model_name: own
    litellm_params: {model: openai/gpt-4o, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
  - model_name: table
    litellm_params: {model: openai/gpt-4o-mini}
  - model_name: window-set
    litellm_params: {model: openai/gpt-4o-mini, max_input_tokens: 1000}
  - model_name: azure
    litellm_params: {model: azure/prod, api_base: "https://x.openai.azure.com"}
    model_info: {base_model: gpt-4.1}
  - model_name: bedrock
    litellm_params: {model: bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0}
  - model_name: mock-known
    litellm_params: {model: mock/gpt-4o}
  - model_name: mock-unknown
    litellm_params: {model: mock/house-model}
  - model_name: wild
    litellm_params: {model: openai/*}
  - model_name: unknown
    litellm_params:
      model: hosted_vllm/llama-3-8b
      api_base: http://vllm:8000/v1
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	warnings := c.ResolvePrices(pricing.Default())
	d := map[string]*Deployment{}
	for _, dep := range c.Deployments {
		d[dep.ModelName] = dep
	}
	tab := pricing.Default()
	mini, _ := tab.Get("gpt-4o-mini")
	gpt41, _ := tab.Get("azure/gpt-4.1")
	sonnet, _ := tab.Get("anthropic.claude-3-7-sonnet-20250219-v1:0")
	gpt4o, _ := tab.Get("gpt-4o")

	if p := d["own"].Price; p == nil || p.Input != 1e-6 || p.Output != 2e-6 {
		t.Errorf("the deployment's own price wins: %+v", p)
	}
	if d["own"].MaxInputTokens != 128000 || d["own"].Price.MaxInput != 128000 || d["own"].MaxOutputTokens != 16384 {
		t.Errorf("limits filled from the table even with an own price: %+v", d["own"])
	}
	if p := d["table"].Price; p == nil || *p != mini || d["table"].MaxInputTokens != 128000 || d["table"].MaxOutputTokens != 16384 {
		t.Errorf("table price and limits: %+v, %+v", p, d["table"])
	}
	if d["window-set"].MaxInputTokens != 1000 || d["window-set"].Price.MaxInput != 1000 {
		t.Errorf("a configured window is kept: %d", d["window-set"].MaxInputTokens)
	}
	if p := d["azure"].Price; p == nil || p.Input != gpt41.Input || p.Output != gpt41.Output {
		t.Errorf("azure priced by base_model: %+v", p)
	}
	if p := d["bedrock"].Price; p == nil || p.Input != sonnet.Input || p.CacheWrite != sonnet.CacheWrite {
		t.Errorf("bedrock profile: %+v", p)
	}
	if p := d["mock-known"].Price; p == nil || *p != gpt4o {
		t.Errorf("a mock is priced by its model name: %+v", p)
	}
	if p := d["mock-unknown"].Price; p == nil || *p != (pricing.Price{}) {
		t.Errorf("an unknown mock costs a known 0: %+v", p)
	}
	if d["wild"].Price != nil || d["unknown"].Price != nil {
		t.Errorf("wildcard and unknown deployments have no price: %+v %+v", d["wild"].Price, d["unknown"].Price)
	}
	if len(warnings) != 1 || len(c.Warnings) != 1 || c.Warnings[0] != warnings[0] {
		t.Fatalf("want one price warning, for the unknown deployment, after the load's: %v (config: %v)", warnings, c.Warnings)
	}
	w := warnings[0]
	if w.Path != "model_list[8].litellm_params.model" || w.Line != 22 ||
		!strings.Contains(w.Message, "no price for deployment "+d["unknown"].ID+" (hosted_vllm/llama-3-8b); its cost is unknown") {
		t.Errorf("warning = %s", w)
	}

	// Another table replaces what the first one filled in, and its warnings.
	other, err := pricing.Parse([]byte(`{"hosted_vllm/llama-3-8b": {"input_cost_per_token": 1e-7, "output_cost_per_token": 2e-7, "max_input_tokens": 8192}}`))
	if err != nil {
		t.Fatal(err)
	}
	warnings = c.ResolvePrices(other)
	if d["table"].Price != nil || d["table"].MaxInputTokens != 0 || d["table"].MaxOutputTokens != 0 {
		t.Errorf("the first table's price and limits stay: %+v", d["table"])
	}
	if p := d["unknown"].Price; p == nil || p.Input != 1e-7 || d["unknown"].MaxInputTokens != 8192 {
		t.Errorf("the second table's price: %+v", p)
	}
	if d["own"].Price == nil || d["own"].Price.Input != 1e-6 || d["window-set"].MaxInputTokens != 1000 {
		t.Errorf("config values lost: %+v %d", d["own"].Price, d["window-set"].MaxInputTokens)
	}
	// Without the embedded table: table, window-set, azure and bedrock are
	// unknown; mocks cost 0, own has its price.
	if len(warnings) != 4 || len(c.Warnings) != 4 {
		t.Errorf("warnings %v (config: %v)", warnings, c.Warnings)
	}
	for _, w := range c.Warnings {
		if strings.Contains(w.Message, "hosted_vllm") {
			t.Errorf("stale warning: %s", w)
		}
	}
}

// The embedded default config costs something, with no warnings.
func TestDefaultConfigPriced(t *testing.T) {
	c := Default()
	if len(c.Warnings) != 0 {
		t.Fatalf("default config warns: %v", c.Warnings)
	}
	for _, d := range c.Deployments {
		if d.Price == nil || d.Price.Input <= 0 {
			t.Errorf("%s: price %+v", d.ID, d.Price)
		}
		if d.MaxInputTokens == 0 {
			t.Errorf("%s: no context window", d.ID)
		}
	}
}
