// Package pricing says what a call costs: a price table in LiteLLM's
// model_prices_and_context_window.json format (an embedded one with the
// common models of the providers the gateway speaks, or a full file of that
// format), and the cost of a usage at a price in integer nano-USD.
//
// All money in the spend pipeline is int64 nano-USD (1e-9 USD): a cost is
// rounded once, per call, and totals are exact sums.
package pricing

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/wire"
)

// NanosPerUSD is the number of nano-USD in one US dollar.
const NanosPerUSD = 1e9

// Price is what a model's tokens cost, in USD per token, and its limits.
type Price struct {
	Input  float64 // an input token that is neither read from nor written to a cache
	Output float64 // an output token (reasoning tokens included)
	// CacheRead and CacheWrite price input tokens read from and written to
	// the provider's prompt cache; zero: priced as Input.
	CacheRead  float64
	CacheWrite float64
	MaxInput   int // context window (0 = unknown)
	MaxOutput  int // output limit (0 = unknown)
}

// CostNanos is the cost of u at p in nano-USD, rounded once to the nearest
// nano-USD. Cached and cache-writing tokens are part of PromptTokens (OpenAI's
// convention) and are priced at CacheRead and CacheWrite. Negative counts
// count as zero; a cost beyond int64 is capped.
func (p Price) CostNanos(u wire.Usage) int64 {
	prompt := max(u.PromptTokens, 0)
	cached := min(max(u.CachedTokens, 0), prompt)
	written := min(max(u.CacheCreationTokens, 0), prompt-cached)
	plain := prompt - cached - written
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	usd := float64(plain)*p.Input + float64(cached)*read + float64(written)*write +
		float64(max(u.CompletionTokens, 0))*p.Output
	return nanos(usd)
}

// USD formats nano-USD as a decimal number of dollars, as LiteLLM's
// x-litellm-response-cost header carries it ("0.000123").
func USD(nanos int64) string {
	return strconv.FormatFloat(float64(nanos)/NanosPerUSD, 'f', -1, 64)
}

// Table is a price table: model name -> price. A parsed table (Parse,
// GATEWAY_PRICES) is a map; the embedded one is its generated entries,
// sorted by name and binary searched, so that a cold start builds no map.
type Table struct {
	m      map[string]Price
	sorted []entry
	src    []byte         // the table's text (providers.go reads its litellm_provider fields)
	idx    *providerIndex // built from src on first use
}

// entry is one model of a sorted table.
type entry struct {
	name  string
	price Price
}

// get finds key (a string, or bytes without converting them) in the map,
// or by binary search in the sorted entries; it allocates nothing.
func get[K ~string | ~[]byte](t *Table, key K) (Price, bool) {
	if t.m != nil {
		p, ok := t.m[string(key)] // no allocation: the compiler looks up the bytes
		return p, ok
	}
	lo, hi := 0, len(t.sorted)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if compare(t.sorted[mid].name, key) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(t.sorted) && compare(t.sorted[lo].name, key) == 0 {
		return t.sorted[lo].price, true
	}
	return Price{}, false
}

// compare orders a and b bytewise, as strings.Compare does.
func compare[K ~string | ~[]byte](a string, b K) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// number reads a JSON number (or a string holding one); ok is false for
// anything else, and for negative, NaN or infinite values.
func number(v gjson.Result) (float64, bool) {
	var s string
	switch v.Type {
	case gjson.Number:
		s = v.Raw
	case gjson.String:
		s = strings.TrimSpace(v.Str)
	default:
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func count(v gjson.Result) int {
	f, ok := number(v)
	if !ok || f > math.MaxInt32 {
		return 0
	}
	return int(f)
}

// Parse reads a price file in LiteLLM's format: a JSON object from model
// name to an object with input_cost_per_token, output_cost_per_token,
// cache_read_input_token_cost (or input_cost_per_token_cache_hit),
// cache_creation_input_token_cost, max_input_tokens, max_output_tokens and
// max_tokens. LiteLLM's "sample_spec" entry, and entries with neither an
// input nor an output price per token (image, audio or per-second models),
// are left out. Values are read leniently: LiteLLM's own file holds
// descriptions where numbers go, and fields the gateway does not use are
// ignored; an entry whose mode is not a string keeps only its input and
// output prices.
//
// It walks the text once (gjson, no reflection): a GATEWAY_PRICES file is
// parsed at every cold start, and encoding/json took several milliseconds.
// (The embedded table is parsed at build time: prices_gen.tsv, gen.go.)
func Parse(data []byte) (*Table, error) {
	if !gjson.ValidBytes(data) {
		var v any
		err := json.Unmarshal(data, &v) // for its message
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, fmt.Errorf("price table: %w", err)
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return nil, fmt.Errorf("price table: want a JSON object of models, got %s", kind(root))
	}
	t := &Table{m: map[string]Price{}, src: data, idx: &providerIndex{}}
	root.ForEach(func(name, v gjson.Result) bool {
		if name.Str == "sample_spec" || !v.IsObject() { // LiteLLM's documentation of the format; not a model
			delete(t.m, name.Str) // a later duplicate replaces an earlier one
			return true
		}
		var in, out, cacheRead, cacheHit, cacheWrite, maxIn, maxOut, maxTokens, mode gjson.Result
		v.ForEach(func(k, f gjson.Result) bool {
			key := k.Str
			if strings.ContainsFunc(key, func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
				key = strings.ToLower(key) // as encoding/json matched them
			}
			switch key {
			case "input_cost_per_token":
				in = f
			case "output_cost_per_token":
				out = f
			case "cache_read_input_token_cost":
				cacheRead = f
			case "input_cost_per_token_cache_hit":
				cacheHit = f
			case "cache_creation_input_token_cost":
				cacheWrite = f
			case "max_input_tokens":
				maxIn = f
			case "max_output_tokens":
				maxOut = f
			case "max_tokens":
				maxTokens = f
			case "mode":
				mode = f
			}
			return true
		})
		if mode.Exists() && mode.Type != gjson.String && mode.Type != gjson.Null {
			// a field of an unexpected type: read the prices alone
			cacheRead, cacheHit, cacheWrite, maxIn, maxOut, maxTokens, mode = gjson.Result{}, gjson.Result{}, gjson.Result{}, gjson.Result{}, gjson.Result{}, gjson.Result{}, gjson.Result{}
		}
		pin, hasIn := number(in)
		pout, hasOut := number(out)
		if !hasIn && !hasOut {
			delete(t.m, name.Str) // a later duplicate replaces an earlier one
			return true
		}
		p := Price{Input: pin, Output: pout, MaxInput: count(maxIn), MaxOutput: count(maxOut)}
		if r, ok := number(cacheRead); ok {
			p.CacheRead = r
		} else if r, ok := number(cacheHit); ok {
			p.CacheRead = r
		}
		p.CacheWrite, _ = number(cacheWrite)
		if p.MaxOutput == 0 && mode.Str != "embedding" { // LiteLLM: max_tokens is the output limit where it differs
			p.MaxOutput = count(maxTokens)
		}
		t.m[name.Str] = p
		return true
	})
	return t, nil
}

func kind(v gjson.Result) string {
	switch {
	case v.IsArray():
		return "an array"
	case v.Type == gjson.String:
		return "a string"
	case v.Type == gjson.Number:
		return "a number"
	}
	return v.Type.String()
}

// LoadFile reads a price file (GATEWAY_PRICES).
func LoadFile(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read price table: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// prices.json is the embedded table's source (LiteLLM's
// model_prices_and_context_window.json; see README.md); prices_gen.tsv holds
// it parsed and sorted (TestPricesGen fails when the two differ), so that a
// cold start reads plain numbers rather than JSON and builds no map: lookups
// binary search the entries (gen.go).
//
//go:generate sh -c "SLUICE_GEN=1 go test -run ^TestPricesGen$ ."
//go:embed prices.json
var defaultJSON []byte

var defaultTable = Table{sorted: parseGen(defaultGen), src: defaultJSON, idx: &providerIndex{}}

// Default is the embedded price table.
func Default() *Table { return &defaultTable }

// DefaultJSON is the embedded price table's text.
func DefaultJSON() []byte { return defaultJSON }

// Len is the number of models in the table.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	if t.m != nil {
		return len(t.m)
	}
	return len(t.sorted)
}

// Get returns the price of one table key, as it is spelled.
func (t *Table) Get(key string) (Price, bool) {
	if t == nil {
		return Price{}, false
	}
	return get(t, key)
}

// Lookup finds the price of a deployment's model. baseModel (model_info.
// base_model), when set, is what the operator says the deployment is (an
// Azure deployment name says nothing about its model), so it is tried first;
// then model. Each name is tried as "provider/name", then as "name" alone;
// a Bedrock id loses its "converse/" or "invoke/" route, and a cross-region
// inference profile ("us.", "eu.", "apac.", "global.", ...) not in the table
// is priced as the model it routes to. Lookup allocates nothing.
func (t *Table) Lookup(provider, model, baseModel string) (Price, bool) {
	if t == nil {
		return Price{}, false
	}
	if baseModel != "" {
		if p, ok := t.lookupName(provider, baseModel); ok {
			return p, true
		}
	}
	if model == "" {
		return Price{}, false
	}
	return t.lookupName(provider, model)
}

// Bedrock's cross-region inference profile prefixes.
var profilePrefixes = []string{"us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global."}

func (t *Table) lookupName(provider, name string) (Price, bool) {
	if p, ok := t.withProvider(provider, name); ok {
		return p, true
	}
	if rest, ok := strings.CutPrefix(name, "converse/"); ok {
		name = rest
	} else if rest, ok := strings.CutPrefix(name, "invoke/"); ok {
		name = rest
	} else {
		return Price{}, false
	}
	return t.withProvider(provider, name)
}

func (t *Table) withProvider(provider, name string) (Price, bool) {
	if provider != "" {
		var buf [160]byte
		k := append(append(append(buf[:0], provider...), '/'), name...)
		if p, ok := get(t, k); ok {
			return p, true
		}
	}
	if p, ok := get(t, name); ok {
		return p, true
	}
	for _, pre := range profilePrefixes {
		if rest, ok := strings.CutPrefix(name, pre); ok && strings.Contains(rest, ".") {
			return t.withProvider(provider, rest)
		}
	}
	return Price{}, false
}
