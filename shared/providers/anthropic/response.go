package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/wire"
)

// FinishReason maps Anthropic's stop_reason to OpenAI's finish_reason.
func FinishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	default: // end_turn, stop_sequence, pause_turn
		return "stop"
	}
}

var errNotMessage = errors.New("anthropic: the response is not a message")

// TranslateResponse turns a Messages API response into an OpenAI chat
// completion.
func TranslateResponse(raw []byte, created int64) ([]byte, error) {
	return translateResponse(raw, created, false)
}

// translateResponse is TranslateResponse; in jsonMode, an answer that is one
// json_tool_call tool use is the JSON content it stands for, with finish
// reason stop (as in LiteLLM).
func translateResponse(raw []byte, created int64, jsonMode bool) ([]byte, error) {
	if !gjson.ValidBytes(raw) {
		return nil, errNotMessage
	}
	r := gjson.ParseBytes(raw)
	if r.Get("type").String() != "message" {
		return nil, errNotMessage
	}
	out := wire.AppendCompletionHead(make([]byte, 0, len(raw)+128), r.Get("id").String(), created, r.Get("model").String())
	var text, reasoning []byte
	var calls, thinking []byte // thinking: the thinking_blocks list's items
	nCalls := 0
	var lastName, lastInput string // the last tool use, for JSON mode
	r.Get("content").ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").String() {
		case "text":
			text = append(text, b.Get("text").String()...)
		case "thinking":
			t := b.Get("thinking").String()
			reasoning = append(reasoning, t...)
			thinking = appendThinkingBlock(comma(thinking), t, b.Get("signature").String())
		case "redacted_thinking":
			if reasoning == nil {
				reasoning = []byte{} // "" beside the blocks, as in LiteLLM
			}
			thinking = appendRedactedBlock(comma(thinking), b.Get("data").String())
		case "tool_use":
			in := b.Get("input").Raw
			if in == "" {
				in = "{}"
			}
			lastName, lastInput = b.Get("name").String(), compact(in)
			calls = wire.AppendToolCall(calls, nCalls, b.Get("id").String(), lastName, lastInput)
			nCalls++
		}
		return true
	})
	finish := FinishReason(r.Get("stop_reason").String())
	if jsonMode && nCalls == 1 && lastName == JSONToolName {
		text, calls, nCalls = []byte(lastInput), nil, 0
		if finish == "tool_calls" { // a cut answer stays "length"
			finish = "stop"
		}
	}
	out = wire.AppendMessageEnd(out, text, reasoning, thinking, calls, nCalls, finish)
	u := r.Get("usage")
	out = wire.AppendUsage(out, u.Get("input_tokens").Int(), u.Get("output_tokens").Int(),
		u.Get("cache_read_input_tokens").Int(), u.Get("cache_creation_input_tokens").Int())
	out = append(out, '}')
	return out, nil
}

// comma separates a list item from the one before, if any.
func comma(b []byte) []byte {
	if len(b) > 0 {
		return append(b, ',')
	}
	return b
}

// appendThinkingBlock appends a thinking block with its signature, as
// LiteLLM's thinking_blocks carry it.
func appendThinkingBlock(b []byte, thinking, signature string) []byte {
	b = append(b, `{"type":"thinking","thinking":`...)
	b = wire.AppendString(b, thinking)
	b = append(b, `,"signature":`...)
	b = wire.AppendString(b, signature)
	return append(b, '}')
}

// appendRedactedBlock appends a redacted_thinking block (encrypted data).
func appendRedactedBlock(b []byte, data string) []byte {
	b = append(b, `{"type":"redacted_thinking","data":`...)
	b = wire.AppendString(b, data)
	return append(b, '}')
}

// compact removes insignificant whitespace from JSON (tool arguments).
func compact(raw string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		return raw
	}
	return b.String()
}
