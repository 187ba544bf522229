package pricing

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// parseReflect is Parse as it was written with encoding/json, the
// reference the one-pass Parse must agree with.
func parseReflect(data []byte) (*Table, error) {
	type entry struct {
		Input          json.RawMessage `json:"input_cost_per_token"`
		Output         json.RawMessage `json:"output_cost_per_token"`
		CacheRead      json.RawMessage `json:"cache_read_input_token_cost"`
		CacheHit       json.RawMessage `json:"input_cost_per_token_cache_hit"`
		CacheWrite     json.RawMessage `json:"cache_creation_input_token_cost"`
		MaxInputTokens json.RawMessage `json:"max_input_tokens"`
		MaxOutput      json.RawMessage `json:"max_output_tokens"`
		MaxTokens      json.RawMessage `json:"max_tokens"`
		Mode           string          `json:"mode"`
	}
	number := func(raw json.RawMessage) (float64, bool) {
		s := strings.TrimSpace(string(raw))
		if s == "" || s == "null" {
			return 0, false
		}
		if s[0] == '"' {
			var str string
			if json.Unmarshal(raw, &str) != nil {
				return 0, false
			}
			s = strings.TrimSpace(str)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	}
	count := func(raw json.RawMessage) int {
		f, ok := number(raw)
		if !ok || f > math.MaxInt32 {
			return 0
		}
		return int(f)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	t := &Table{m: map[string]Price{}}
	for name, v := range raw {
		if name == "sample_spec" {
			continue
		}
		var e entry
		if json.Unmarshal(v, &e) != nil {
			e = entry{}
			var nums struct {
				Input  json.RawMessage `json:"input_cost_per_token"`
				Output json.RawMessage `json:"output_cost_per_token"`
			}
			if json.Unmarshal(v, &nums) != nil {
				continue
			}
			e.Input, e.Output = nums.Input, nums.Output
		}
		in, hasIn := number(e.Input)
		out, hasOut := number(e.Output)
		if !hasIn && !hasOut {
			continue
		}
		p := Price{Input: in, Output: out, MaxInput: count(e.MaxInputTokens), MaxOutput: count(e.MaxOutput)}
		if r, ok := number(e.CacheRead); ok {
			p.CacheRead = r
		} else if r, ok := number(e.CacheHit); ok {
			p.CacheRead = r
		}
		p.CacheWrite, _ = number(e.CacheWrite)
		if p.MaxOutput == 0 && e.Mode != "embedding" {
			p.MaxOutput = count(e.MaxTokens)
		}
		t.m[name] = p
	}
	return t, nil
}

func TestParseAgreesWithEncodingJSON(t *testing.T) {
	sample, err := os.ReadFile(filepath.Join("testdata", "litellm_sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{
		"embedded": string(defaultJSON),
		"sample":   string(sample),
		"odd": `{
			"a": {"input_cost_per_token": "  2e-6 ", "output_cost_per_token": null, "max_tokens": "12", "mode": null},
			"b": {"Input_Cost_Per_Token": 1e-6, "max_output_tokens": 1e12, "mode": 3, "max_input_tokens": 5},
			"c": {"input_cost_per_token": -1, "output_cost_per_token": "x"},
			"d": [1, 2], "e": 5, "f": "g", "sample_spec": {"input_cost_per_token": 1},
			"dup": {"input_cost_per_token": 1}, "dup": {"output_cost_per_token": 2, "output_cost_per_token": 3},
			"gone": {"input_cost_per_token": 1}, "gone": {"mode": "chat"},
			"esc\u0041pe": {"input_cost_per_token": 4e-6, "cache_read_input_token_cost": 1e-7, "input_cost_per_token_cache_hit": 2e-7,
				"cache_creation_input_token_cost": "3e-7", "max_input_tokens": 128000.0, "max_tokens": 100, "mode": "embedding"},
			"hit": {"output_cost_per_token": 1e-6, "input_cost_per_token_cache_hit": 2e-7, "max_output_tokens": {"x": 1}}
		}`,
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			got, err := Parse([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			want, err := parseReflect([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.m, want.m) {
				for k, w := range want.m {
					if g, ok := got.m[k]; !ok || g != w {
						t.Errorf("%q: got %+v (%v), want %+v", k, g, ok, w)
					}
				}
				for k, g := range got.m {
					if _, ok := want.m[k]; !ok {
						t.Errorf("%q: got %+v, want no entry", k, g)
					}
				}
			}
			if name == "embedded" && len(got.m) < 50 {
				t.Errorf("the embedded table has %d models", len(got.m))
			}
		})
	}
}

func BenchmarkParseDefault(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(defaultJSON); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseReflect(b *testing.B) {
	for b.Loop() {
		if _, err := parseReflect(defaultJSON); err != nil {
			b.Fatal(err)
		}
	}
}
