package responses

import (
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/sse"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Stream turns a chat completion stream, chunk by chunk, into the
// Responses API's event sequence: response.created and
// response.in_progress, then per output item output_item.added, its parts
// and deltas (reasoning summary text, output text, function call
// arguments) and output_item.done, and response.completed with the usage.
// Every event carries its sequence_number, from 0, as OpenAI's do.
type Stream struct {
	m       Meta
	seq     int64
	started bool
	items   []*item
	open    *item           // the message or reasoning item receiving deltas
	calls   map[int64]*item // function call items by the chat tool call index
	tools   map[string]tool // the request's tools, by the name the model sees
	usage   wire.Usage
	hasUse  bool
	reason  int64 // reasoning tokens
	finish  string
	out     []byte
}

type item struct {
	index  int
	kind   string // "message", "reasoning", "function_call"
	id     string
	text   []byte // text, reasoning summary, or arguments
	callID string
	tool   tool
}

// NewStream returns the translator of one response's stream.
func NewStream(m Meta) *Stream {
	return &Stream{m: m, tools: toolsOf(gjson.GetBytes(m.Request, "tools"))}
}

// Event translates one chat SSE event's data and returns the Responses
// events it stands for (SSE bytes; perhaps none). An in-band error and
// anything that is not a chunk pass through as they came.
func (s *Stream) Event(data []byte) []byte {
	s.out = s.out[:0]
	if sse.IsDone(data) {
		return nil
	}
	c := gjson.ParseBytes(data)
	if c.Get("error").Exists() || !c.IsObject() {
		s.out = append(s.out, "data: "...)
		s.out = append(s.out, data...)
		return append(s.out, "\n\n"...)
	}
	s.start()
	if u, ok := wire.UsageOf(data); ok {
		s.usage, s.hasUse = u, true
		s.reason = c.Get("usage.completion_tokens_details.reasoning_tokens").Int()
	}
	ch := c.Get("choices.0")
	d := ch.Get("delta")
	if r := d.Get("reasoning_content"); r.Type == gjson.String && r.Str != "" {
		it := s.openItem("reasoning")
		s.emit("response.reasoning_summary_text.delta", "item_id", it.id, "output_index", it.index, "summary_index", 0, "delta", r.Str)
		it.text = append(it.text, r.Str...)
	}
	if t := d.Get("content"); t.Type == gjson.String && t.Str != "" {
		it := s.openItem("message")
		s.emit("response.output_text.delta", "item_id", it.id, "output_index", it.index, "content_index", 0, "delta", t.Str, "logprobs", []any{})
		it.text = append(it.text, t.Str...)
	}
	d.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		i := tc.Get("index").Int()
		it := s.calls[i]
		if it == nil {
			s.closeOpen()
			t := toolOf(s.tools, tc.Get("function.name").Str)
			it = &item{index: len(s.items), kind: "function_call", id: NewItemID(t.idPrefix()), callID: tc.Get("id").Str, tool: t}
			if it.callID == "" {
				it.callID = NewItemID("call")
			}
			s.items = append(s.items, it)
			if s.calls == nil {
				s.calls = map[int64]*item{}
			}
			s.calls[i] = it
			s.emit("response.output_item.added", "output_index", it.index, "item", toolCallItem(it.tool, it.id, "in_progress", it.callID, ""))
		}
		if a := tc.Get("function.arguments"); a.Type == gjson.String && a.Str != "" {
			if !it.tool.custom { // a custom call's input is whole once its JSON is
				s.emit("response.function_call_arguments.delta", "item_id", it.id, "output_index", it.index, "delta", a.Str)
			}
			it.text = append(it.text, a.Str...)
		}
		return true
	})
	if f := ch.Get("finish_reason"); f.Type == gjson.String && f.Str != "" {
		s.finish = f.Str
	}
	return s.out
}

// Seq is the sequence number of the next event.
func (s *Stream) Seq() int64 { return s.seq }

// End closes the open items and returns the last events (ending with
// response.completed, or response.incomplete when the output was cut),
// the response object and its output items.
func (s *Stream) End() (events, object, output []byte) {
	s.out = s.out[:0]
	s.start()
	s.closeOpen()
	for _, it := range s.items {
		if it.kind == "function_call" {
			s.done(it)
		}
	}
	output = s.output()
	var usage []byte
	if s.hasUse {
		usage = usageJSON(s.usage, s.reason)
	}
	status, incomplete := statusOf(s.finish)
	object = s.m.object(status, output, usage, incomplete)
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	s.emit(typ, "response", json.RawMessage(object))
	return s.out, object, output
}

func (s *Stream) start() {
	if s.started {
		return
	}
	s.started = true
	obj := json.RawMessage(s.m.object("in_progress", []byte("[]"), nil, ""))
	s.emit("response.created", "response", obj)
	s.emit("response.in_progress", "response", obj)
}

// openItem returns the open item of kind, closing another one first.
func (s *Stream) openItem(kind string) *item {
	if s.open != nil && s.open.kind == kind {
		return s.open
	}
	s.closeOpen()
	it := &item{index: len(s.items), kind: kind}
	s.items = append(s.items, it)
	s.open = it
	if kind == "reasoning" {
		it.id = NewItemID("rs")
		s.emit("response.output_item.added", "output_index", it.index, "item", map[string]any{"id": it.id, "type": "reasoning", "summary": []any{}})
		s.emit("response.reasoning_summary_part.added", "item_id", it.id, "output_index", it.index, "summary_index", 0, "part", map[string]any{"type": "summary_text", "text": ""})
		return it
	}
	it.id = NewItemID("msg")
	s.emit("response.output_item.added", "output_index", it.index, "item", messageItem(it.id, "in_progress", ""))
	s.emit("response.content_part.added", "item_id", it.id, "output_index", it.index, "content_index", 0, "part", outputText(""))
	return it
}

// closeOpen ends the open message or reasoning item.
func (s *Stream) closeOpen() {
	it := s.open
	if it == nil {
		return
	}
	s.open = nil
	text := string(it.text)
	if it.kind == "reasoning" {
		s.emit("response.reasoning_summary_text.done", "item_id", it.id, "output_index", it.index, "summary_index", 0, "text", text)
		s.emit("response.reasoning_summary_part.done", "item_id", it.id, "output_index", it.index, "summary_index", 0, "part", map[string]any{"type": "summary_text", "text": text})
	} else {
		s.emit("response.output_text.done", "item_id", it.id, "output_index", it.index, "content_index", 0, "text", text, "logprobs", []any{})
		s.emit("response.content_part.done", "item_id", it.id, "output_index", it.index, "content_index", 0, "part", outputText(text))
	}
	s.done(it)
}

// done sends an item's output_item.done (a function call's arguments.done
// first).
func (s *Stream) done(it *item) {
	switch {
	case it.kind == "function_call" && it.tool.custom:
		s.emit("response.custom_tool_call_input.done", "item_id", it.id, "output_index", it.index, "input", customInput(string(it.text)))
	case it.kind == "function_call":
		s.emit("response.function_call_arguments.done", "item_id", it.id, "output_index", it.index, "arguments", string(it.text))
	}
	s.emit("response.output_item.done", "output_index", it.index, "item", it.object())
}

func (it *item) object() map[string]any {
	switch it.kind {
	case "reasoning":
		return reasoningItem(it.id, string(it.text))
	case "function_call":
		return toolCallItem(it.tool, it.id, "completed", it.callID, string(it.text))
	}
	return messageItem(it.id, "completed", string(it.text))
}

func (s *Stream) output() []byte {
	objs := make([]any, len(s.items))
	for i, it := range s.items {
		objs[i] = it.object()
	}
	b, _ := json.Marshal(objs)
	return b
}

// emit appends one event: its type, its sequence number and the members
// given as key, value pairs, in that order.
func (s *Stream) emit(typ string, kv ...any) {
	s.out = append(s.out, "event: "...)
	s.out = append(s.out, typ...)
	s.out = append(s.out, "\ndata: {\"type\":"...)
	s.out = appendString(s.out, typ)
	s.out = append(s.out, `,"sequence_number":`...)
	s.out = strconv.AppendInt(s.out, s.seq, 10)
	s.seq++
	for i := 0; i+1 < len(kv); i += 2 {
		s.out = append(s.out, ',')
		s.out = appendString(s.out, kv[i].(string))
		s.out = append(s.out, ':')
		v, _ := json.Marshal(kv[i+1])
		s.out = append(s.out, v...)
	}
	s.out = append(s.out, "}\n\n"...)
}
