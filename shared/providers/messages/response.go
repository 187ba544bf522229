package messages

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/wire"
)

// FromChat returns a 2xx chat completions response as a Messages response:
// JSON, or an event stream translated event by event. model is the model
// the answer names.
func FromChat(resp *http.Response, stream bool, model string) (*http.Response, error) {
	if stream {
		out := response("text/event-stream", nil)
		out.Header = resp.Header.Clone()
		out.Header["Content-Type"] = []string{"text/event-stream"}
		out.Header.Del("Content-Length")
		out.Body = newStream(resp.Body, model)
		out.ContentLength = -1
		return out, nil
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if !gjson.ValidBytes(raw) {
		return nil, apierr.New(apierr.UpstreamServer, "the chat answer is not valid JSON")
	}
	out := response("application/json", Message(raw, model))
	return out, nil
}

type message struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []block         `json:"content"`
	StopReason   string          `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Usage        json.RawMessage `json:"usage"`
}

type block struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// Message translates a chat completion body to a Messages response body.
func Message(raw []byte, model string) []byte {
	c := gjson.ParseBytes(raw)
	m := message{ID: messageID(c.Get("id").Str), Type: "message", Role: "assistant", Model: model, Content: []block{}}
	if m.Model == "" {
		m.Model = c.Get("model").Str
	}
	choice := c.Get("choices.0")
	if t := choice.Get("message.content"); t.Type == gjson.String && t.Str != "" {
		text := t.Str
		m.Content = append(m.Content, block{Type: "text", Text: &text})
	}
	choice.Get("message.tool_calls").ForEach(func(_, tc gjson.Result) bool {
		m.Content = append(m.Content, block{Type: "tool_use", ID: tc.Get("id").Str, Name: tc.Get("function.name").Str,
			Input: toolInput(tc.Get("function.arguments").Str)})
		return true
	})
	m.StopReason = stopReason(choice.Get("finish_reason").Str)
	u, _ := wire.UsageOf(raw)
	m.Usage = usageJSON(nil, u)
	b, _ := json.Marshal(m)
	return b
}

// toolInput is a tool call's arguments as a tool use's input: a JSON
// object, or {} when the model wrote something else.
func toolInput(args string) json.RawMessage {
	if v := gjson.Parse(args); v.IsObject() && gjson.Valid(args) {
		return json.RawMessage(args)
	}
	return json.RawMessage(`{}`)
}

// stopReason maps a chat finish reason to Anthropic's stop reason.
func stopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// usageJSON appends u as Anthropic's usage: input_tokens exclude the cache
// reads and writes it counts apart.
func usageJSON(out []byte, u wire.Usage) []byte {
	input := max(u.PromptTokens-u.CachedTokens-u.CacheCreationTokens, 0)
	out = append(out, `{"input_tokens":`...)
	out = appendInt(out, input)
	out = append(out, `,"cache_creation_input_tokens":`...)
	out = appendInt(out, u.CacheCreationTokens)
	out = append(out, `,"cache_read_input_tokens":`...)
	out = appendInt(out, u.CachedTokens)
	out = append(out, `,"output_tokens":`...)
	out = appendInt(out, u.CompletionTokens)
	return append(out, '}')
}

// messageID is a Messages id for a chat completion's id.
func messageID(id string) string {
	if strings.HasPrefix(id, "msg_") {
		return id
	}
	if id == "" {
		return "msg_sluice"
	}
	return "msg_" + id
}

func response(contentType string, body []byte) *http.Response {
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{contentType}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
	}
}
