// Package responses translates OpenAI's Responses API to chat completions
// and back, for the deployments that speak only chat (Anthropic, Bedrock,
// the mock, OpenAI-compatible servers): the request's input items,
// instructions and tools become a chat request, and the chat answer, whole
// or streamed, becomes a response object or the Responses event sequence.
// It also holds the stored-response port (store.go) that lets a
// conversation continue with previous_response_id on any instance.
package responses

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// Turn is one earlier response of a conversation: its input items and its
// output items (JSON arrays), oldest first.
type Turn struct {
	Input  json.RawMessage
	Output json.RawMessage
}

// Input returns a request's input as a JSON array of items: a string
// input is one user message.
func Input(req []byte) (json.RawMessage, error) {
	in := gjson.GetBytes(req, "input")
	switch {
	case in.Type == gjson.String:
		b, _ := json.Marshal([]any{map[string]any{"type": "message", "role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": in.Str}}}})
		return b, nil
	case in.IsArray():
		return json.RawMessage(in.Raw), nil
	case !in.Exists() || in.Type == gjson.Null:
		return json.RawMessage("[]"), nil
	}
	return nil, invalid("input", "'input' must be a string or an array of input items")
}

func invalid(param, format string, args ...any) *apierr.Error {
	return apierr.NewParam(apierr.InvalidRequest, param, format, args...)
}

// chatMessage is one chat completions message being built.
type chatMessage struct {
	Role       string     `json:"role"`
	Content    any        `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ToChat returns the chat completions body for a Responses request sent
// to model: history (the turns before previous_response_id, oldest first)
// and the request's input become messages; instructions the system
// message; function tools, tool_choice, max_output_tokens, temperature,
// top_p, user, parallel_tool_calls and text.format carry over. streamUsage
// asks a stream for its usage (stream_options.include_usage). What chat
// cannot carry (tools other than functions, their calls, other content)
// is refused naming its param, or, with drop (drop_params), left out.
func ToChat(req []byte, model string, history []Turn, stream, streamUsage, drop bool) ([]byte, error) {
	r := gjson.ParseBytes(req)
	var msgs []chatMessage
	if ins := r.Get("instructions"); ins.Type == gjson.String && ins.Str != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: ins.Str})
	}
	var err error
	for _, t := range history {
		if msgs, err = appendItems(msgs, gjson.ParseBytes(t.Input), drop); err != nil {
			return nil, err
		}
		if msgs, err = appendItems(msgs, gjson.ParseBytes(t.Output), drop); err != nil {
			return nil, err
		}
	}
	in, err := Input(req)
	if err != nil {
		return nil, err
	}
	if msgs, err = appendItems(msgs, gjson.ParseBytes(in), drop); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, invalid("input", "missing required parameter: 'input'")
	}
	out := map[string]any{"model": model, "messages": msgs}
	if stream {
		out["stream"] = true
		if streamUsage {
			out["stream_options"] = map[string]any{"include_usage": true}
		}
	}
	for _, k := range [...]string{"temperature", "top_p", "user", "parallel_tool_calls"} {
		if v := r.Get(k); v.Exists() && v.Type != gjson.Null {
			out[k] = json.RawMessage(v.Raw)
		}
	}
	if v := r.Get("max_output_tokens"); v.Type == gjson.Number {
		out["max_tokens"] = json.RawMessage(v.Raw)
	}
	if v := r.Get("reasoning.effort"); v.Type == gjson.String {
		out["reasoning_effort"] = v.Str
	}
	if tools := chatTools(r.Get("tools")); len(tools) > 0 {
		out["tools"] = tools
	}
	if tc := r.Get("tool_choice"); tc.Exists() && tc.Type != gjson.Null {
		c, err := chatToolChoice(tc)
		switch {
		case err == nil:
			out["tool_choice"] = c
		case !drop:
			return nil, err
		}
	}
	if f := r.Get("text.format"); f.IsObject() {
		switch f.Get("type").Str {
		case "json_schema":
			js := map[string]any{"name": f.Get("name").Str, "schema": json.RawMessage(orEmpty(f.Get("schema").Raw))}
			if s := f.Get("strict"); s.IsBool() {
				js["strict"] = s.Bool()
			}
			if d := f.Get("description"); d.Type == gjson.String {
				js["description"] = d.Str
			}
			out["response_format"] = map[string]any{"type": "json_schema", "json_schema": js}
		case "json_object":
			out["response_format"] = map[string]any{"type": "json_object"}
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("responses: encode chat request: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func orEmpty(raw string) string {
	if raw == "" {
		return "{}"
	}
	return raw
}

// appendItems appends the chat messages of a list of Responses items:
// messages (easy or typed, input_text, output_text, input_image parts),
// function calls (merged into the assistant message before them) and
// their outputs. Reasoning items are dropped: a chat request carries no
// reasoning.
func appendItems(msgs []chatMessage, items gjson.Result, drop bool) ([]chatMessage, error) {
	var err error
	items.ForEach(func(_, it gjson.Result) bool {
		typ := it.Get("type").Str
		if typ == "" && it.Get("role").Exists() {
			typ = "message"
		}
		switch typ {
		case "message":
			role := it.Get("role").Str
			switch role {
			case "developer":
				role = "system"
			case "user", "assistant", "system":
			default:
				err = invalid("input", "input message role %q is not supported", role)
				return false
			}
			var content any
			content, err = chatContent(it.Get("content"), role, drop)
			if err != nil {
				return false
			}
			msgs = append(msgs, chatMessage{Role: role, Content: content})
		case "function_call", "custom_tool_call":
			tc := toolCall{ID: it.Get("call_id").Str, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = namespaced(it.Get("namespace").Str, it.Get("name").Str), it.Get("arguments").Str
			if typ == "custom_tool_call" {
				b, _ := json.Marshal(map[string]string{"content": it.Get("input").Str})
				tc.Function.Arguments = string(b)
			}
			if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" && msgs[n-1].ToolCallID == "" {
				msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, tc)
			} else {
				msgs = append(msgs, chatMessage{Role: "assistant", Content: nil, ToolCalls: []toolCall{tc}})
			}
		case "function_call_output", "custom_tool_call_output":
			out := it.Get("output")
			text := out.Str
			if out.Type != gjson.String { // a list of content parts: their text
				text = ""
				out.ForEach(func(_, p gjson.Result) bool { text += p.Get("text").Str; return true })
			}
			msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: it.Get("call_id").Str, Content: text})
		case "reasoning", "item_reference":
			// Nothing a chat request can carry.
		default:
			if hostedCall(typ) { // the call of a tool a chat model does not have
				break
			}
			if !drop {
				err = invalid("input", "input item type %q is not supported by this model's provider (it speaks chat completions)"+dropHint, typ)
				return false
			}
		}
		return true
	})
	return msgs, err
}

const dropHint = `; to leave such items out, set "drop_params": true in the request or litellm_settings: drop_params: true`

// chatContent converts a message's content: a string, or parts.
func chatContent(c gjson.Result, role string, drop bool) (any, error) {
	if c.Type == gjson.String {
		return c.Str, nil
	}
	if !c.IsArray() {
		return "", nil
	}
	var parts []map[string]any
	texts := true
	var err error
	c.ForEach(func(_, p gjson.Result) bool {
		switch t := p.Get("type").Str; t {
		case "input_text", "output_text", "text", "refusal":
			txt := p.Get("text").Str
			if t == "refusal" {
				txt = p.Get("refusal").Str
			}
			parts = append(parts, map[string]any{"type": "text", "text": txt})
		case "input_image":
			if role != "user" {
				err = invalid("input", "images are allowed in user messages only")
				return false
			}
			url := p.Get("image_url").Str
			if url == "" {
				err = invalid("input", "input_image: only image_url is supported by this model's provider (file_id is not)")
				return false
			}
			img := map[string]any{"url": url}
			if d := p.Get("detail"); d.Type == gjson.String {
				img["detail"] = d.Str
			}
			parts = append(parts, map[string]any{"type": "image_url", "image_url": img})
			texts = false
		default:
			if !drop {
				err = invalid("input", "content part type %q is not supported by this model's provider (it speaks chat completions)"+dropHint, t)
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if texts || role != "user" { // plain text: one string, as every chat server takes
		s := ""
		for _, p := range parts {
			if t, ok := p["text"].(string); ok {
				s += t
			}
		}
		return s, nil
	}
	return parts, nil
}

// chatToolChoice converts tool_choice: "auto", "none", "required", a
// function or custom tool, or allowed_tools' mode.
func chatToolChoice(tc gjson.Result) (any, error) {
	if tc.Type == gjson.String {
		switch tc.Str {
		case "auto", "none", "required":
			return tc.Str, nil
		}
		return nil, invalid("tool_choice", "tool_choice %q is not supported", tc.Str)
	}
	switch typ, name := tc.Get("type").Str, tc.Get("name").Str; {
	case (typ == "function" || typ == "custom") && name != "":
		return map[string]any{"type": "function", "function": map[string]any{"name": name}}, nil
	case typ == "allowed_tools":
		if m := tc.Get("mode").Str; m == "required" {
			return m, nil
		}
		return "auto", nil
	}
	return nil, invalid("tool_choice", "tool_choice: only \"auto\", \"none\", \"required\" and function choices are supported by this model's provider")
}

// Expand returns a Responses request that carries its conversation whole,
// for a deployment that does not hold it: previous_response_id dropped,
// and the turns' input and output items (oldest first) before the
// request's input. Reasoning items are left out, and item ids removed:
// they belong to the provider that made them.
func Expand(req []byte, history []Turn) ([]byte, error) {
	in, err := Input(req)
	if err != nil {
		return nil, err
	}
	items := make([]json.RawMessage, 0, 8)
	add := func(list []byte) {
		gjson.ParseBytes(list).ForEach(func(_, it gjson.Result) bool {
			if it.Get("type").Str == "reasoning" {
				return true
			}
			raw := []byte(it.Raw)
			if it.Get("id").Exists() {
				if b, err := sjson.DeleteBytes(raw, "id"); err == nil {
					raw = b
				}
			}
			items = append(items, raw)
			return true
		})
	}
	for _, t := range history {
		add(t.Input)
		add(t.Output)
	}
	add(in)
	list, err := json.Marshal(items)
	if err != nil {
		return nil, fmt.Errorf("responses: expand: %w", err)
	}
	out, err := sjson.DeleteBytes(req, "previous_response_id")
	if err == nil {
		out, err = sjson.SetRawBytes(out, "input", list)
	}
	if err != nil {
		return nil, fmt.Errorf("responses: expand: %w", err)
	}
	return out, nil
}
