package responses

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/wire"
)

// Meta is what a translated response carries beside its output: its id,
// model and creation time, and the request it answers (the fields a
// response object echoes: instructions, tools, temperature, ...).
type Meta struct {
	ID      string
	Model   string
	Created int64
	Request []byte
}

// echoed are the request fields a response object repeats, with the value
// OpenAI shows when the request did not set them.
var echoed = [...]struct{ key, def string }{
	{"instructions", "null"}, {"max_output_tokens", "null"}, {"metadata", "{}"},
	{"parallel_tool_calls", "true"}, {"previous_response_id", "null"},
	{"reasoning", `{"effort":null,"summary":null}`}, {"store", "true"},
	{"temperature", "1.0"}, {"text", `{"format":{"type":"text"}}`},
	{"tool_choice", `"auto"`}, {"tools", "[]"}, {"top_p", "1.0"},
	{"truncation", `"disabled"`}, {"user", "null"},
}

// object returns the response object with the given status, output items
// (a JSON array) and usage (nil: null).
func (m *Meta) object(status string, output []byte, usage []byte, incomplete string) []byte {
	b := make([]byte, 0, 512+len(output))
	b = append(b, `{"id":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, m.Created, 10)
	b = append(b, `,"status":`...)
	b = appendString(b, status)
	b = append(b, `,"error":null,"incomplete_details":`...)
	if incomplete != "" {
		b = append(b, `{"reason":`...)
		b = appendString(b, incomplete)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"model":`...)
	b = appendString(b, m.Model)
	b = append(b, `,"output":`...)
	b = append(b, output...)
	r := gjson.ParseBytes(m.Request)
	for _, f := range echoed {
		b = append(b, ',', '"')
		b = append(b, f.key...)
		b = append(b, '"', ':')
		if v := r.Get(f.key); v.Exists() && (v.Type != gjson.Null || f.def == "null") {
			b = append(b, v.Raw...)
		} else {
			b = append(b, f.def...)
		}
	}
	b = append(b, `,"usage":`...)
	if usage == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, usage...)
	}
	return append(b, '}')
}

// usageJSON is a Responses usage object. Tokens written to the provider's
// prompt cache (Anthropic's cache_creation_input_tokens), which OpenAI's
// usage has no name for, are input_tokens_details.cache_creation_tokens:
// the gateway prices them (wire.ResponsesUsage), clients ignore them.
func usageJSON(u wire.Usage, reasoning int64) []byte {
	b := []byte(`{"input_tokens":`)
	b = strconv.AppendInt(b, u.PromptTokens, 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, u.CachedTokens, 10)
	if u.CacheCreationTokens > 0 {
		b = append(b, `,"cache_creation_tokens":`...)
		b = strconv.AppendInt(b, u.CacheCreationTokens, 10)
	}
	b = append(b, `},"output_tokens":`...)
	b = strconv.AppendInt(b, u.CompletionTokens, 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, reasoning, 10)
	b = append(b, `},"total_tokens":`...)
	b = strconv.AppendInt(b, u.PromptTokens+u.CompletionTokens, 10)
	return append(b, '}')
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// NewItemID returns a fresh random id with a prefix ("resp", "msg", "fc",
// "rs"), shaped as OpenAI's: unique, not secret.
func NewItemID(prefix string) string {
	var b [24]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:16], rand.Uint64())
	binary.LittleEndian.PutUint64(b[16:], rand.Uint64())
	return prefix + "_" + hex.EncodeToString(b[:])
}

// statusOf maps a chat finish_reason to the response's status and its
// incomplete reason.
func statusOf(finish string) (status, incomplete string) {
	switch finish {
	case "length":
		return "incomplete", "max_output_tokens"
	case "content_filter":
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

// FromChat returns the response object for a chat completion body, and
// its output items (a JSON array, for the stored conversation).
func FromChat(chat []byte, m Meta) (object, output []byte) {
	c := gjson.ParseBytes(chat)
	msg := c.Get("choices.0.message")
	items := make([]any, 0, 2)
	if r := msg.Get("reasoning_content"); r.Type == gjson.String && r.Str != "" {
		items = append(items, reasoningItem(NewItemID("rs"), r.Str))
	}
	if t := msg.Get("content"); t.Type == gjson.String && t.Str != "" {
		items = append(items, messageItem(NewItemID("msg"), "completed", t.Str))
	}
	tools := toolsOf(gjson.GetBytes(m.Request, "tools"))
	msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		t := toolOf(tools, tc.Get("function.name").Str)
		items = append(items, toolCallItem(t, NewItemID(t.idPrefix()), "completed", tc.Get("id").Str, tc.Get("function.arguments").Str))
		return true
	})
	output, _ = json.Marshal(items)
	var usage []byte
	if u, ok := wire.UsageOf(chat); ok {
		usage = usageJSON(u, c.Get("usage.completion_tokens_details.reasoning_tokens").Int())
	}
	status, incomplete := statusOf(c.Get("choices.0.finish_reason").Str)
	return m.object(status, output, usage, incomplete), output
}

func reasoningItem(id, text string) map[string]any {
	return map[string]any{"id": id, "type": "reasoning",
		"summary": []any{map[string]any{"type": "summary_text", "text": text}}}
}

func messageItem(id, status, text string) map[string]any {
	content := []any{}
	if status == "completed" {
		content = []any{outputText(text)}
	}
	return map[string]any{"id": id, "type": "message", "status": status, "role": "assistant", "content": content}
}

func outputText(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

func functionCallItem(id, status, callID, name, args string) map[string]any {
	return map[string]any{"id": id, "type": "function_call", "status": status, "call_id": callID, "name": name, "arguments": args}
}
