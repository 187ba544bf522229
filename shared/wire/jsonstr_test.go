package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "line\nret\rtab\t", "\x00\x01\x1f", "héllo ✓ 😀", "bad \xff\xfe utf8", "end\xc3"} {
		out := AppendString([]byte("x"), s)
		if out[0] != 'x' {
			t.Fatalf("%q: prefix lost", s)
		}
		var got string
		if err := json.Unmarshal(out[1:], &got); err != nil {
			t.Fatalf("%q: %s is not a JSON string: %v", s, out[1:], err)
		}
		var want strings.Builder
		for _, r := range s { // U+FFFD for each invalid byte
			want.WriteRune(r)
		}
		if got != want.String() {
			t.Errorf("%q read back as %q, want %q", s, got, want.String())
		}
	}
}

func TestAppendCompletion(t *testing.T) {
	for _, tc := range []struct {
		name            string
		text, reasoning []byte
		thinking        string // thinking_blocks items
		tools           int
		wantContent     any
	}{
		{"text", []byte("hi \"there\""), nil, "", 0, "hi \"there\""},
		{"tools only", nil, nil, "", 2, nil},
		{"empty", nil, nil, "", 0, ""},
		{"text, reasoning and a tool", []byte("ok"), []byte("because"), "", 1, "ok"},
		{"thinking blocks and a tool", nil, []byte("hm"), `{"type":"thinking","thinking":"hm","signature":"s"}`, 1, nil},
	} {
		b := AppendCompletionHead(nil, "id-1", 42, "m\n")
		var calls []byte
		for i := range tc.tools {
			calls = AppendToolCall(calls, i, "call-"+string(rune('a'+i)), "f", `{"x":1}`)
		}
		b = AppendMessageEnd(b, tc.text, tc.reasoning, []byte(tc.thinking), calls, tc.tools, "tool_calls")
		b = append(b, `{"prompt_tokens":1}}`...)
		var got struct {
			ID      string `json:"id"`
			Created int64  `json:"created"`
			Model   string `json:"model"`
			Choices []struct {
				Message struct {
					Content   any               `json:"content"`
					Reasoning string            `json:"reasoning_content"`
					Thinking  []json.RawMessage `json:"thinking_blocks"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %s: %v", tc.name, b, err)
		}
		m := got.Choices[0].Message
		if got.ID != "id-1" || got.Created != 42 || got.Model != "m\n" || got.Choices[0].FinishReason != "tool_calls" ||
			m.Content != tc.wantContent || m.Reasoning != string(tc.reasoning) || len(m.ToolCalls) != tc.tools ||
			(tc.thinking == "") != (m.Thinking == nil) || (tc.thinking != "" && string(m.Thinking[0]) != tc.thinking) {
			t.Errorf("%s: %s", tc.name, b)
		}
		for i, c := range m.ToolCalls {
			if c.Index != i || c.Function.Name != "f" || c.Function.Arguments != `{"x":1}` {
				t.Errorf("%s: tool call %d = %+v", tc.name, i, c)
			}
		}
	}
}
