package catalog

import "testing"

func TestLookup(t *testing.T) {
	tests := []struct {
		prefix string
		want   Entry
		known  bool
	}{
		{"openai", Entry{Protocol: OpenAI, DefaultBase: "https://api.openai.com/v1"}, true},
		{"hosted_vllm", Entry{Protocol: OpenAI, NeedsBase: true}, true},
		{"groq", Entry{Protocol: OpenAI, DefaultBase: "https://api.groq.com/openai/v1"}, true},
		{"azure", Entry{Protocol: Azure, NeedsBase: true}, true},
		{"bedrock_converse", Entry{Protocol: Bedrock}, true},
		{"gemini", Entry{Protocol: Gemini, DefaultBase: "https://generativelanguage.googleapis.com/v1beta"}, true},
		{"vertex_ai", Entry{Protocol: Vertex}, true},
		{"vertex_ai_beta", Entry{}, true},
		{"opnai", Entry{}, false},
	}
	for _, tt := range tests {
		got, known := Lookup(tt.prefix)
		if got != tt.want || known != tt.known {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, %v", tt.prefix, got, known, tt.want, tt.known)
		}
	}
	if n := len(Prefixes()); n != len(entries) || n < 50 {
		t.Errorf("Prefixes() has %d names, entries %d", n, len(entries))
	}
}

func TestSignalMatch(t *testing.T) {
	w := Merge(ErrorWords{ContextWindow: Signal{Codes: []string{"too_long"}}},
		ErrorWords{ContextWindow: Signal{Phrases: []string{"context window"}}, Overloaded: Signal{Statuses: []int{529}, Types: []string{"overloaded"}}})
	tests := []struct {
		s                Signal
		status           int
		code, typ, lower string
		want             bool
	}{
		{w.ContextWindow, 400, "too_long", "", "", true},
		{w.ContextWindow, 400, "", "", "over the context window", true},
		{w.ContextWindow, 400, "other", "", "no", false},
		{w.Overloaded, 529, "", "", "", true},
		{w.Overloaded, 500, "", "overloaded", "", true},
		{w.Overloaded, 500, "", "", "", false},
		{w.ContentPolicy, 400, "", "", "", false},
	}
	for i, tt := range tests {
		if got := tt.s.Match(tt.status, tt.code, tt.typ, tt.lower); got != tt.want {
			t.Errorf("%d: Match = %v, want %v", i, got, tt.want)
		}
	}
}
