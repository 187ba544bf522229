// Package messages translates Anthropic's Messages API to OpenAI's chat
// completions and back, for the deployments that do not speak it (OpenAI,
// Azure, the OpenAI-compatible servers, the mock, Bedrock's non-Claude
// models through Converse): the request to a chat request (ToChat), the
// answer, JSON or an SSE stream, to a Messages response or event stream
// (FromChat), event by event. Anthropic's features with no chat
// counterpart are dropped where dropping changes nothing the client relies
// on (thinking, top_k, cache_control) and refused otherwise (documents,
// server tools), unless drop_params asks for them to be dropped too.
package messages

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/wire"
)

type chatRequest struct {
	Model             string          `json:"model"`
	Messages          []chatMessage   `json:"messages"`
	MaxTokens         int64           `json:"max_tokens,omitempty"`
	Temperature       json.RawMessage `json:"temperature,omitempty"`
	TopP              json.RawMessage `json:"top_p,omitempty"`
	Stop              []string        `json:"stop,omitempty"`
	Stream            bool            `json:"stream,omitempty"`
	StreamOptions     *streamOptions  `json:"stream_options,omitempty"`
	Tools             []chatTool      `json:"tools,omitempty"`
	ToolChoice        any             `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	User              string          `json:"user,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role       string     `json:"role"`
	Content    any        `json:"content"` // string, []part, or nil
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function functionDecl `json:"function"`
}

type functionDecl struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func badRequest(format string, args ...any) *apierr.Error {
	return apierr.New(apierr.InvalidRequest, format, args...)
}

// ToChat translates a Messages request body to a chat completions body.
// drop drops what has no chat counterpart instead of refusing it.
func ToChat(body []byte, drop bool) ([]byte, error) {
	root := gjson.ParseBytes(body)
	r := chatRequest{}
	var err error
	var system string // first, wherever the body has it (the Go SDK writes it after messages)
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			r.Model = v.Str
		case "max_tokens":
			r.MaxTokens = v.Int()
		case "temperature":
			r.Temperature = json.RawMessage(v.Raw)
		case "top_p":
			r.TopP = json.RawMessage(v.Raw)
		case "stop_sequences":
			v.ForEach(func(_, s gjson.Result) bool { r.Stop = append(r.Stop, s.String()); return true })
		case "stream":
			r.Stream = v.Type == gjson.True
		case "metadata":
			r.User = v.Get("user_id").Str
		case "system":
			system = textOf(v)
		case "messages":
			v.ForEach(func(_, m gjson.Result) bool {
				r.Messages, err = appendMessage(r.Messages, m, drop)
				return err == nil
			})
		case "tools":
			v.ForEach(func(_, t gjson.Result) bool {
				schema := t.Get("input_schema")
				if typ := t.Get("type").Str; (typ != "" && typ != "custom") || !schema.Exists() {
					if !drop {
						err = badRequest("tool %q (type %q) is an Anthropic server tool: it needs an Anthropic deployment (or drop_params to drop it)", t.Get("name").Str, typ)
						return false
					}
					return true
				}
				r.Tools = append(r.Tools, chatTool{Type: "function", Function: functionDecl{
					Name: t.Get("name").Str, Description: t.Get("description").Str, Parameters: json.RawMessage(schema.Raw)}})
				return true
			})
		case "tool_choice":
			switch v.Get("type").Str {
			case "auto":
				r.ToolChoice = "auto"
			case "any":
				r.ToolChoice = "required"
			case "none":
				r.ToolChoice = "none"
			case "tool":
				r.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": v.Get("name").Str}}
			}
			if v.Get("disable_parallel_tool_use").Bool() {
				f := false
				r.ParallelToolCalls = &f
			}
		}
		// thinking, top_k, service_tier, container, mcp_servers...: no
		// chat counterpart; the answer comes without them.
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if system != "" {
		r.Messages = slices.Insert(r.Messages, 0, chatMessage{Role: "system", Content: system})
	}
	if len(r.Tools) == 0 {
		r.ToolChoice, r.ParallelToolCalls = nil, nil
	}
	if r.Stream {
		r.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	return json.Marshal(r)
}

// textOf is a system prompt's or tool result's text: a string, or the
// text blocks of a list joined by newlines.
func textOf(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.Str
	}
	var b bytes.Buffer
	v.ForEach(func(_, blk gjson.Result) bool {
		if blk.Get("type").Str == "text" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(blk.Get("text").Str)
		}
		return true
	})
	return b.String()
}

// appendMessage appends the chat messages of one Messages message: a
// user's tool results become tool messages (before the rest of its
// content), an assistant's tool uses its tool calls.
func appendMessage(out []chatMessage, m gjson.Result, drop bool) ([]chatMessage, error) {
	role := m.Get("role").Str
	content := m.Get("content")
	switch role {
	case "user", "assistant":
	case "system":
		// A system message mid-conversation (Claude Code sends them, as
		// Anthropic's API takes them from Claude Opus 4.8 on) stays where
		// it is, as a chat system message: its text.
		if text := textOf(content); text != "" {
			out = append(out, chatMessage{Role: "system", Content: text})
		}
		return out, nil
	default:
		return nil, badRequest("messages: role %q is not one of user, assistant, system", role)
	}
	if content.Type == gjson.String {
		return append(out, chatMessage{Role: role, Content: content.Str}), nil
	}
	var parts []part
	var calls []toolCall
	var text bytes.Buffer
	var err error
	content.ForEach(func(_, blk gjson.Result) bool {
		switch typ := blk.Get("type").Str; typ {
		case "text":
			parts = append(parts, part{Type: "text", Text: blk.Get("text").Str})
			text.WriteString(blk.Get("text").Str)
		case "image":
			src := blk.Get("source")
			switch src.Get("type").Str {
			case "base64":
				parts = append(parts, part{Type: "image_url", ImageURL: &imageURL{URL: "data:" + src.Get("media_type").Str + ";base64," + src.Get("data").Str}})
			case "url":
				parts = append(parts, part{Type: "image_url", ImageURL: &imageURL{URL: src.Get("url").Str}})
			default:
				if !drop {
					err = badRequest("image source %q needs an Anthropic deployment", src.Get("type").Str)
				}
			}
		case "tool_use":
			in := blk.Get("input").Raw
			if in == "" {
				in = "{}"
			}
			calls = append(calls, toolCall{ID: blk.Get("id").Str, Type: "function", Function: functionCall{Name: blk.Get("name").Str, Arguments: in}})
		case "tool_result":
			res := textOf(blk.Get("content"))
			if blk.Get("is_error").Bool() && res == "" {
				res = "error"
			}
			out = append(out, chatMessage{Role: "tool", ToolCallID: blk.Get("tool_use_id").Str, Content: res})
		case "thinking", "redacted_thinking":
			// The chat model cannot check a signature: the reasoning is
			// dropped from the history.
		default:
			if !drop {
				err = badRequest("content block %q needs an Anthropic deployment (or drop_params to drop it)", typ)
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case role == "assistant" && (text.Len() > 0 || len(calls) > 0):
		msg := chatMessage{Role: role, ToolCalls: calls}
		if text.Len() > 0 {
			msg.Content = text.String()
		}
		out = append(out, msg)
	case role == "user" && len(parts) > 0:
		out = append(out, chatMessage{Role: role, Content: parts})
	}
	return out, nil
}

// EstimateCount answers count_tokens for a deployment that cannot count:
// the gateway's own estimate (about four bytes a token, wire.EstimateTokens),
// flagged by the X-Sluice-Token-Count: estimate header.
func EstimateCount(body []byte) *http.Response {
	out := strconv.AppendInt([]byte(`{"input_tokens":`), int64(wire.EstimateTokens(body)), 10)
	out = append(out, '}')
	resp := response("application/json", out)
	resp.Header[EstimateHeader] = []string{"estimate"}
	return resp
}

// EstimateHeader flags a count_tokens answer that is the gateway's estimate.
const EstimateHeader = "X-Sluice-Token-Count"
