package config

import "testing"

// The numbers LiteLLM's PatternUtils.calculate_pattern_specificity gives
// the regular expression of each pattern (re.escape, then \* -> (.*)).
func TestSpecificity(t *testing.T) {
	for _, tt := range []struct {
		pattern  string
		regex    string // for the reader: what LiteLLM matches with
		len, ops int
	}{
		{"*", `(.*)`, 4, 3},
		{"openai/*", `openai/(.*)`, 11, 3},
		{"gpt-4o*", `gpt\-4o(.*)`, 11, 4},
		{"azure/gpt-4.1-*", `azure/gpt\-4\.1\-(.*)`, 21, 6},
		{"a+b*", `a\+b(.*)`, 8, 5},
	} {
		l, o := Specificity(tt.pattern)
		if l != tt.len || o != tt.ops || l != len(tt.regex) {
			t.Errorf("Specificity(%q) = %d, %d; want %d, %d (regex %s)", tt.pattern, l, o, tt.len, tt.ops, tt.regex)
		}
	}
}

// A group's wildcard fallbacks: the most specific matching entry, whatever
// the order of the file; an exact entry before any.
func TestFallbacksForMostSpecific(t *testing.T) {
	star := Fallback{From: "*", To: []string{"any"}}
	oai := Fallback{From: "openai/*", To: []string{"oai"}}
	exact := Fallback{From: "openai/gpt-4o", To: []string{"exact"}}
	for _, fbs := range [][]Fallback{{star, oai}, {oai, star}} {
		if got := FallbacksFor(fbs, "openai/gpt-4.1"); len(got) != 1 || got[0] != "oai" {
			t.Errorf("%v: openai/gpt-4.1 -> %v, want [oai]", fbs, got)
		}
		if got := FallbacksFor(fbs, "claude"); len(got) != 1 || got[0] != "any" {
			t.Errorf("%v: claude -> %v, want [any]", fbs, got)
		}
		if got := FallbacksFor(append(fbs, exact), "openai/gpt-4o"); len(got) != 1 || got[0] != "exact" {
			t.Errorf("%v: openai/gpt-4o -> %v, want [exact]", fbs, got)
		}
	}
	if got := FallbacksFor([]Fallback{oai}, "claude"); got != nil {
		t.Errorf("no match -> %v, want nil", got)
	}
}
