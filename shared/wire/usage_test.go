package wire

import (
	"github.com/tidwall/gjson"

	"strings"
	"testing"
)

func TestUsageAdd(t *testing.T) {
	a := Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3, CachedTokens: 4, CacheCreationTokens: 5}
	b := Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30, CachedTokens: 40, CacheCreationTokens: 50}
	want := Usage{PromptTokens: 11, CompletionTokens: 22, TotalTokens: 33, CachedTokens: 44, CacheCreationTokens: 55}
	if got := a.Add(b); got != want {
		t.Fatalf("Add = %+v, want %+v", got, want)
	}
}

func TestTextBytes(t *testing.T) {
	tests := []struct {
		name string
		data string
		want int
	}{
		{"empty", ``, 0},
		{"role chunk", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, 0},
		{"content", `{"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`, 5},
		{"content null", `{"choices":[{"delta":{"content":null,"refusal":null}}]}`, 0},
		{"spaces around colon", `{"choices": [{"delta": {"content" :  "abc"}}]}`, 3},
		{"escapes count as written", `{"choices":[{"delta":{"content":"a\"b\\c\n"}}]}`, 9},
		{"a member name inside content is not a key", `{"choices":[{"delta":{"content":"say \"content\":\"xx\" please"}}]}`, 29},
		{"reasoning and content", `{"choices":[{"delta":{"reasoning_content":"think","content":"ok"}}]}`, 7},
		{"tool call arguments", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}`, 9},
		{"refusal", `{"choices":[{"delta":{"refusal":"no"}}]}`, 2},
		{"responses text delta", `{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello"}`, 5},
		{"responses arguments delta", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"a\""}`, 6},
		{"several choices", `{"choices":[{"delta":{"content":"ab"}},{"delta":{"content":"cde"}}]}`, 5},
		{"logprobs content list ignored", `{"choices":[{"message":{"content":"hi"},"logprobs":{"content":[{"token":"hi"}]}}]}`, 2},
		{
			"whole response body",
			`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}],"usage":null}`,
			13,
		},
		{"usage chunk", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}`, 0},
		{"truncated string", `{"choices":[{"delta":{"content":"abc`, 3},
		{"key at the end", `{"content"`, 0},
		{"unicode", `{"content":"héllo"}`, len("héllo")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TextBytes([]byte(tt.data)); got != tt.want {
				t.Errorf("TextBytes(%s) = %d, want %d", tt.data, got, tt.want)
			}
		})
	}
}

func TestTextTokens(t *testing.T) {
	for n, want := range map[int]int64{0: 0, 1: 1, 4: 1, 5: 2, 400: 100} {
		if got := TextTokens(n); got != want {
			t.Errorf("TextTokens(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestTextBytesAllocatesNothing(t *testing.T) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok "},"logprobs":null,"finish_reason":null}]}`)
	if n := testing.AllocsPerRun(100, func() { _ = TextBytes(data) }); n != 0 {
		t.Fatalf("TextBytes allocates %v times", n)
	}
}

func BenchmarkTextBytes(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-mock0001","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"content":"tok5 "},"logprobs":null,"finish_reason":null}]}`)
	long := []byte(strings.Repeat(" ", 4000) + string(data))
	b.Run("chunk", func(b *testing.B) {
		for b.Loop() {
			_ = TextBytes(data)
		}
	})
	b.Run("long", func(b *testing.B) {
		for b.Loop() {
			_ = TextBytes(long)
		}
	})
}

func TestTextMeter(t *testing.T) {
	head := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[`
	content := func(s string) string {
		return head + `{"index":0,"delta":{"content":"` + s + `"},"logprobs":null,"finish_reason":null}]}`
	}
	tool := func(s string) string {
		return head + `{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + s + `"}}]},"finish_reason":null}]}`
	}
	role := head + `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`
	finish := head + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`
	usage := head + `],"usage":{"prompt_tokens":12,"completion_tokens":40,"total_tokens":52}}`
	words := []string{"Hello", ",", " world", " this", " is", " a", " longer", " sentence", " with", " tokens", " of", " many", " sizes", " like", " extraordinarily", "!"}

	tests := []struct {
		name   string
		events []string
		slack  int // allowed error in bytes
	}{
		{"content", append(append([]string{role}, mapStrings(words, content)...), finish, usage, "[DONE]"), 0},
		{"tool call", append([]string{role, head + `{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`},
			append(mapStrings([]string{`{\"`, `city`, `\":\"`, `Paris`, `\"}`}, tool), finish)...), 0},
		{"long content", []string{content(strings.Repeat("x", 300)), content(strings.Repeat("y", 17)), content("z")}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m TextMeter
			exact := 0
			for _, ev := range tt.events {
				m.Add([]byte(ev))
				exact += TextBytes([]byte(ev))
			}
			if d := m.Bytes() - exact; d > tt.slack || d < -tt.slack {
				t.Fatalf("meter counted %d bytes, exactly %d", m.Bytes(), exact)
			}
		})
	}
}

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

// BenchmarkTextMeter is the per-event cost a stream pays for its output
// estimate: a 20-event stream like the gateway benchmarks'.
func BenchmarkTextMeter(b *testing.B) {
	head := `{"id":"chatcmpl-mock0001","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","system_fingerprint":"fp_mock","choices":[`
	var events [][]byte
	events = append(events, []byte(head+`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`))
	for i := 1; i < 19; i++ {
		events = append(events, []byte(head+`{"index":0,"delta":{"content":"tok`+strings.Repeat("x", i%3)+` "},"logprobs":null,"finish_reason":null}]}`))
	}
	events = append(events, []byte(head+`{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":18,"total_tokens":30}}`))
	b.ReportAllocs()
	for b.Loop() {
		var m TextMeter
		for _, ev := range events {
			m.Add(ev)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/event")
}

func TestAppendUsageReadsBack(t *testing.T) {
	body := append([]byte(`{"usage":`), AppendUsage(nil, 100, 20, 30, 5)...)
	body = append(body, '}')
	u, ok := UsageOf(body)
	if !ok || u.PromptTokens != 135 || u.CompletionTokens != 20 || u.TotalTokens != 155 || u.CachedTokens != 30 || u.CacheCreationTokens != 5 {
		t.Fatalf("UsageOf(%s) = %+v, %v; want prompt 135 (cache reads and writes included), completion 20, cached 30, written 5", body, u, ok)
	}
}

func TestUsageOf(t *testing.T) {
	tests := []struct {
		name   string
		data   string
		want   Usage
		wantOK bool
	}{
		{"empty", ``, Usage{}, false},
		{"no usage", `{"id":"x","choices":[]}`, Usage{}, false},
		{"usage null", `{"id":"x","choices":[{"delta":{"content":"hi"}}],"usage":null}`, Usage{}, false},
		{"usage null spaced", `{"usage" :  null }`, Usage{}, false},
		{"usage string", `{"usage":"lots"}`, Usage{}, false},
		{"usage number", `{"usage":12}`, Usage{}, false},
		{"usage empty object", `{"usage":{}}`, Usage{}, false},
		{"word usage in content only", `{"choices":[{"delta":{"content":"usage"}}]}`, Usage{}, false},
		{
			"full object",
			`{"id":"x","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":30,"total_tokens":42}}`,
			Usage{PromptTokens: 12, CompletionTokens: 30, TotalTokens: 42}, true,
		},
		{
			"whitespace around colon",
			"{\"usage\" \n:\t {\n \"prompt_tokens\" : 1 , \"completion_tokens\" : 2 , \"total_tokens\" : 3 }\n}",
			Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}, true,
		},
		{
			"total computed when absent",
			`{"usage":{"prompt_tokens":7,"completion_tokens":5}}`,
			Usage{PromptTokens: 7, CompletionTokens: 5, TotalTokens: 12}, true,
		},
		{
			"provider total kept",
			`{"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":20}}`,
			Usage{PromptTokens: 7, CompletionTokens: 5, TotalTokens: 20}, true,
		},
		{
			"zero prompt tokens still usage",
			`{"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
			Usage{}, true,
		},
		{
			"embedding usage",
			`{"object":"list","data":[],"model":"m","usage":{"prompt_tokens":8,"total_tokens":8}}`,
			Usage{PromptTokens: 8, TotalTokens: 8}, true,
		},
		{
			"cached tokens from details, other details ignored",
			`{"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":64,"total_tokens":1},"completion_tokens_details":{"reasoning_tokens":10}}}`,
			Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120, CachedTokens: 64}, true,
		},
		{
			"details null",
			`{"usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":null}}`,
			Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}, true,
		},
		{
			"anthropic-style cache read and creation (as LiteLLM reports them)",
			`{"usage":{"prompt_tokens":1500,"completion_tokens":10,"total_tokens":1510,"cache_creation_input_tokens":1000,"cache_read_input_tokens":400}}`,
			Usage{PromptTokens: 1500, CompletionTokens: 10, TotalTokens: 1510, CachedTokens: 400, CacheCreationTokens: 1000}, true,
		},
		{
			"details win over cache_read_input_tokens",
			`{"usage":{"prompt_tokens":1500,"completion_tokens":10,"cache_read_input_tokens":300,"prompt_tokens_details":{"cached_tokens":400}}}`,
			Usage{PromptTokens: 1500, CompletionTokens: 10, TotalTokens: 1510, CachedTokens: 400}, true,
		},
		{
			"deepseek cache hits",
			`{"usage":{"prompt_tokens":90,"completion_tokens":5,"total_tokens":95,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":26}}`,
			Usage{PromptTokens: 90, CompletionTokens: 5, TotalTokens: 95, CachedTokens: 64}, true,
		},
		{
			"word usage in content before the usage object",
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"usage"}}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`,
			Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4}, true,
		},
		{
			"nested usage key then top-level null",
			`{"x":{"usage":{"prompt_tokens":9}},"usage":null}`,
			Usage{}, false,
		},
		{
			"azure key order, filter results before usage",
			`{"choices":[{"content_filter_results":{},"message":{"content":"hi"}}],"prompt_filter_results":[{"prompt_index":0}],"system_fingerprint":"fp","usage":{"completion_tokens":2,"prompt_tokens":5,"total_tokens":7}}`,
			Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7}, true,
		},
		{"dangling", `"usage":`, Usage{}, false},
		{"open object", `{"usage":{`, Usage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := UsageOf([]byte(tt.data))
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("UsageOf(%s) = %+v, %v; want %+v, %v", tt.data, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestUsageNotLastOccurrence(t *testing.T) {
	u, ok := UsageOf([]byte(`{"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3},"choices":[{"message":{"content":"usage"}}]}`))
	if !ok || u.TotalTokens != 3 {
		t.Fatalf("UsageOf = %+v, %v", u, ok)
	}
}

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		n    int
		want int
	}{{0, 1}, {1, 1}, {3, 1}, {4, 2}, {7, 2}, {8, 3}, {400, 101}, {1 << 20, 1<<18 + 1}}
	for _, tt := range tests {
		if got := EstimateTokens(make([]byte, tt.n)); got != tt.want {
			t.Errorf("EstimateTokens(%d bytes) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

func TestResponsesUsage(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want Usage
		ok   bool
	}{
		{`{"input_tokens":12,"input_tokens_details":{"cached_tokens":4},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":17}`, Usage{PromptTokens: 12, CompletionTokens: 5, TotalTokens: 17, CachedTokens: 4}, true},
		{`{"input_tokens":30,"input_tokens_details":{"cached_tokens":10,"cache_creation_tokens":8},"output_tokens":1}`, Usage{PromptTokens: 30, CompletionTokens: 1, TotalTokens: 31, CachedTokens: 10, CacheCreationTokens: 8}, true},
		{`null`, Usage{}, false},
		{`{"prompt_tokens":3}`, Usage{}, false},
	} {
		got, ok := ResponsesUsage(gjson.Parse(tt.raw))
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: %+v %v, want %+v %v", tt.raw, got, ok, tt.want, tt.ok)
		}
	}
	ev := `{"type":"response.completed","sequence_number":9,"response":{"id":"r","usage":{"input_tokens":2,"output_tokens":3}}}`
	if u, ok := ResponsesEventUsage([]byte(ev)); !ok || u.TotalTokens != 5 {
		t.Errorf("completed event: %+v %v", u, ok)
	}
	if _, ok := ResponsesEventUsage([]byte(`{"type":"response.created","response":{"usage":null}}`)); ok {
		t.Error("usage read from response.created")
	}
}
