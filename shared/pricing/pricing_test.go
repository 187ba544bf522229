package pricing

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"path/filepath"
	"testing"

	"github.com/sluice-gw/sluice/shared/wire"
)

func TestCostNanos(t *testing.T) {
	mini := Price{Input: 0.15e-6, Output: 0.6e-6, CacheRead: 0.075e-6}
	sonnet := Price{Input: 3e-6, Output: 15e-6, CacheRead: 0.3e-6, CacheWrite: 3.75e-6}
	tests := []struct {
		name string
		p    Price
		u    wire.Usage
		want int64
	}{
		{"zero", mini, wire.Usage{}, 0},
		{"plain", mini, wire.Usage{PromptTokens: 1000, CompletionTokens: 500}, 150_000 + 300_000},
		{"one token rounds to the nearest nano", Price{Input: 0.02e-9}, wire.Usage{PromptTokens: 1}, 0},
		{"rounding once per call", Price{Input: 0.02e-9}, wire.Usage{PromptTokens: 30}, 1}, // 0.6 nano
		{"cached tokens at the cache price", mini, wire.Usage{PromptTokens: 1000, CachedTokens: 600, CompletionTokens: 10}, 400*150 + 600*75 + 10*600},
		{
			"cache reads and writes (anthropic)",
			sonnet, wire.Usage{PromptTokens: 1500, CachedTokens: 400, CacheCreationTokens: 1000, CompletionTokens: 10},
			100*3000 + 400*300 + 1000*3750 + 10*15000,
		},
		{"no cache price: input price", Price{Input: 1e-6, Output: 2e-6}, wire.Usage{PromptTokens: 10, CachedTokens: 5, CacheCreationTokens: 5}, 10_000},
		{"cached beyond prompt is capped", mini, wire.Usage{PromptTokens: 10, CachedTokens: 50}, 10 * 75},
		{"negative counts are zero", mini, wire.Usage{PromptTokens: -5, CompletionTokens: -5, CachedTokens: -1}, 0},
		{"embedding", Price{Input: 0.02e-6}, wire.Usage{PromptTokens: 1_000_000}, 20_000_000},
		{"exact for round prices", Price{Input: 0.001, Output: 0.002}, wire.Usage{PromptTokens: 10, CompletionTokens: 2}, 14_000_000},
		{"capped at int64", Price{Input: 1e12}, wire.Usage{PromptTokens: math.MaxInt64}, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.CostNanos(tt.u); got != tt.want {
				t.Errorf("CostNanos(%+v) = %d, want %d", tt.u, got, tt.want)
			}
		})
	}
}

func TestUSD(t *testing.T) {
	for nanos, want := range map[int64]string{0: "0", 1: "0.000000001", 14_000_000: "0.014", 1_500_000_000: "1.5", 123_456: "0.000123456"} {
		if got := USD(nanos); got != want {
			t.Errorf("USD(%d) = %q, want %q", nanos, got, want)
		}
	}
}

// The embedded table: LiteLLM's map, every entry priced per token in it
// (per-image, per-second and per-character entries are not token prices),
// and its prices as published (spot checks).
func TestDefaultTable(t *testing.T) {
	var raw map[string]map[string]any
	if err := json.Unmarshal(DefaultJSON(), &raw); err != nil {
		t.Fatal(err)
	}
	tokenPriced := 0
	for _, e := range raw {
		_, in := e["input_cost_per_token"]
		_, out := e["output_cost_per_token"]
		if in || out {
			tokenPriced++
		}
		if _, ok := e["litellm_provider"]; !ok {
			t.Errorf("not LiteLLM's format: %v", e)
		}
	}
	tab := Default()
	if tab.Len() != tokenPriced || tab.Len() < 400 {
		t.Fatalf("table has %d models, the file %d priced per token", tab.Len(), tokenPriced)
	}
	// LiteLLM's older models, which the first embedded table lacked
	// (issue 20): their spend accrues.
	for _, name := range []string{"gpt-3.5-turbo-0301", "gpt-4-0314", "text-embedding-ada-002"} {
		if p, ok := tab.Get(name); !ok || p.Input <= 0 {
			t.Errorf("%s is not priced: %+v", name, p)
		}
	}
	tests := []struct {
		key                string
		in, out, cacheRead float64 // USD per million tokens
		maxIn, maxOut      int
	}{
		{"gpt-4o", 2.5, 10, 1.25, 128000, 16384},
		{"gpt-4o-mini", 0.15, 0.6, 0.075, 128000, 16384},
		{"gpt-4.1", 2, 8, 0.5, 1047576, 32768},
		{"o3-mini", 1.1, 4.4, 0.55, 200000, 100000},
		{"text-embedding-3-small", 0.02, 0, 0, 8191, 0},
		{"azure/gpt-4o", 2.5, 10, 1.25, 128000, 16384},
		{"claude-3-5-sonnet-20241022", 3, 15, 0.3, 200000, 8192},
		{"claude-opus-4-1-20250805", 15, 75, 1.5, 200000, 32000},
		{"anthropic.claude-3-7-sonnet-20250219-v1:0", 3, 15, 0.3, 200000, 64000},
		{"anthropic.claude-sonnet-4-5-20250929-v1:0", 3.3, 16.5, 0.33, 200000, 64000},
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", 3, 15, 0.3, 200000, 64000},
		{"amazon.titan-embed-text-v2:0", 0.02, 0, 0, 8192, 0},
		{"deepseek/deepseek-chat", 0.28, 0.42, 0.028, 128000, 8192},
		{"groq/llama-3.3-70b-versatile", 0.59, 0.79, 0, 128000, 32768},
	}
	for _, tt := range tests {
		p, ok := tab.Get(tt.key)
		if !ok {
			t.Errorf("%s: not in the table", tt.key)
			continue
		}
		if !near(p.Input, tt.in*1e-6) || !near(p.Output, tt.out*1e-6) || !near(p.CacheRead, tt.cacheRead*1e-6) ||
			p.MaxInput != tt.maxIn || (tt.maxOut != 0 && p.MaxOutput != tt.maxOut) {
			t.Errorf("%s = %+v", tt.key, p)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }

func TestLookup(t *testing.T) {
	tab := Default()
	tests := []struct {
		name                       string
		provider, model, baseModel string
		wantKey                    string // "" means: not found
	}{
		{"openai", "openai", "gpt-4o-mini", "", "gpt-4o-mini"},
		{"provider-prefixed key first", "azure", "gpt-4o", "", "azure/gpt-4o"},
		{"azure deployment name with base_model", "azure", "my-prod-deployment", "gpt-4o-mini", "azure/gpt-4o-mini"},
		{"base_model with its prefix", "azure", "my-prod-deployment", "azure/gpt-4.1", "azure/gpt-4.1"},
		{"base_model wins over the model name", "azure", "gpt-4o", "gpt-4o-mini", "azure/gpt-4o-mini"},
		{"unknown base_model falls back to the model", "azure", "gpt-4o", "no-such-model", "azure/gpt-4o"},
		{"mock by model name", "mock", "gpt-4o-mini", "", "gpt-4o-mini"},
		{"bedrock id", "bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0", "", "anthropic.claude-3-5-sonnet-20240620-v1:0"},
		{"bedrock us. profile priced as regional", "bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", "", "anthropic.claude-3-7-sonnet-20250219-v1:0"},
		{"bedrock eu. profile of a 4.5 model: regional", "bedrock", "eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "", "anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"bedrock global. profile of a 4.5 model", "bedrock", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", "", "global.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"bedrock global. profile of an older model", "bedrock", "global.anthropic.claude-sonnet-4-20250514-v1:0", "", "anthropic.claude-sonnet-4-20250514-v1:0"},
		{"bedrock converse route", "bedrock", "converse/us.anthropic.claude-3-5-haiku-20241022-v1:0", "", "anthropic.claude-3-5-haiku-20241022-v1:0"},
		{"bedrock invoke route", "bedrock", "invoke/anthropic.claude-3-haiku-20240307-v1:0", "", "anthropic.claude-3-haiku-20240307-v1:0"},
		{"bedrock titan embeddings", "bedrock", "amazon.titan-embed-text-v2:0", "", "amazon.titan-embed-text-v2:0"},
		{"anthropic", "anthropic", "claude-3-5-haiku-20241022", "", "claude-3-5-haiku-20241022"},
		{"groq", "groq", "llama-3.3-70b-versatile", "", "groq/llama-3.3-70b-versatile"},
		{"openrouter nested name", "openrouter", "openai/gpt-4o", "", "openrouter/openai/gpt-4o"},
		{"together nested name", "together_ai", "meta-llama/Llama-3.3-70B-Instruct-Turbo", "", "together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo"},
		{"unknown", "hosted_vllm", "meta-llama/Llama-3.1-8B-Instruct", "", ""},
		{"a dotted name is not a profile", "openai", "us.gpt-4o", "", ""},
		{"empty", "openai", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tab.Lookup(tt.provider, tt.model, tt.baseModel)
			if tt.wantKey == "" {
				if ok {
					t.Fatalf("found %+v, want nothing", got)
				}
				return
			}
			want, _ := tab.Get(tt.wantKey)
			if !ok || got != want {
				t.Fatalf("Lookup = %+v, %v; want %s = %+v", got, ok, tt.wantKey, want)
			}
		})
	}
	var nilTable *Table
	if _, ok := nilTable.Lookup("openai", "gpt-4o", ""); ok || nilTable.Len() != 0 {
		t.Fatal("a nil table knows prices")
	}
}

func TestLookupAllocatesNothing(t *testing.T) {
	tab := Default()
	n := testing.AllocsPerRun(100, func() {
		_, _ = tab.Lookup("bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", "")
		_, _ = tab.Lookup("azure", "gpt-4o", "")
	})
	if n != 0 {
		t.Fatalf("Lookup allocates %v times", n)
	}
}

// A LiteLLM file: the sample_spec entry's descriptions, fields the gateway
// ignores, per-image models and input_cost_per_token_cache_hit.
func TestParseLiteLLMFile(t *testing.T) {
	tab, err := LoadFile(filepath.Join("testdata", "litellm_sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 5 {
		t.Fatalf("%d models, want 5 (sample_spec and image models left out)", tab.Len())
	}
	if _, ok := tab.Get("sample_spec"); ok {
		t.Error("sample_spec loaded as a model")
	}
	p, ok := tab.Get("deepseek/deepseek-chat")
	if !ok || !near(p.CacheRead, 0.07e-6) || !near(p.Input, 0.27e-6) || p.MaxInput != 65536 || p.MaxOutput != 8192 {
		t.Errorf("deepseek = %+v, %v", p, ok)
	}
	p, ok = tab.Get("legacy-model")
	if !ok || p.MaxOutput != 4096 || p.MaxInput != 0 {
		t.Errorf("max_tokens as the output limit: %+v, %v", p, ok)
	}
	p, ok = tab.Get("text-embedding-3-small")
	if !ok || p.MaxInput != 8191 || p.MaxOutput != 0 {
		t.Errorf("an embedding model's max_tokens is its input: %+v, %v", p, ok)
	}
	p, ok = tab.Get("odd-mode")
	if !ok || !near(p.Input, 1e-6) {
		t.Errorf("a field of an unexpected type: %+v, %v", p, ok)
	}
	p, ok = tab.Get("string-numbers")
	if !ok || !near(p.Input, 1e-6) || p.MaxInput != 1000 {
		t.Errorf("numbers written as strings: %+v, %v", p, ok)
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{``, `[]`, `{"a":`, `"x"`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.json")); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
