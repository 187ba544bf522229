package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/sse"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Provider sends calls to Anthropic deployments.
type Provider struct{ client *http.Client }

// New returns a Provider sending through client.
func New(client *http.Client) *Provider { return &Provider{client: client} }

// StreamUsage reports that a stream may always be asked for its usage: the
// translation counts it from message_start and message_delta.
func (*Provider) StreamUsage(*config.Deployment) bool { return true }

// Do sends call to d and returns Anthropic's answer as an OpenAI-shaped
// response: a chat completion, or OpenAI SSE chunks. A non-2xx response is
// returned as it came, for the caller to classify; so is an error event that
// arrives before anything else in a stream (as the status it stands for).
func (p *Provider) Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	req, jsonMode, err := newRequest(ctx, d, call)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	if !call.Stream {
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		out, err := translateResponse(raw, time.Now().Unix(), jsonMode)
		if err != nil {
			return nil, err
		}
		return replace(resp, "application/json", out), nil
	}
	includeUsage := gjson.GetBytes(call.Body, "stream_options.include_usage").Bool()
	st := NewStream(resp.Body, includeUsage, time.Now().Unix())
	st.jsonMode = jsonMode
	if status, body, ok := st.leadingError(); ok {
		st.Close()
		return replace(resp, "application/json", body, status), nil
	}
	out := replace(resp, "text/event-stream", nil)
	out.Body = st
	out.ContentLength = -1
	return out, nil
}

// replace returns resp with a new body (and status).
func replace(resp *http.Response, contentType string, body []byte, status ...int) *http.Response {
	out := *resp
	out.Header = resp.Header.Clone()
	out.Header["Content-Type"] = []string{contentType}
	out.Header.Del("Content-Length")
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	if len(status) > 0 {
		out.StatusCode = status[0]
		out.Status = strconv.Itoa(status[0]) + " " + http.StatusText(status[0])
	}
	return &out
}

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

// Stream reads Anthropic's event stream and yields OpenAI SSE chunks, one
// upstream event at a time (no goroutine, no buffering beyond one event).
type Stream struct {
	body         io.ReadCloser
	rd           *sse.Reader
	includeUsage bool
	created      int64

	prefix []byte // `data: {"id":...,"model":...,"choices":[{"index":0,"delta":`
	out    []byte // translated bytes not yet read
	off    int
	err    error // returned once out is drained

	scratch    []byte
	pending    []byte // a first event read ahead by leadingError
	started    bool
	done       bool
	tools      map[int64]int // content block index -> tool call index (jsonBlock: the answer's JSON)
	nTools     int
	jsonMode   bool // a json_tool_call tool use is the answer's content
	jsonAnswer bool // one was: the finish reason is stop
	input      int64
	output     int64
	cacheRead  int64
	cacheWrite int64
}

// jsonBlock marks, in Stream.tools, the json_tool_call block of JSON mode.
const jsonBlock = -1

// NewStream returns a Stream over an Anthropic event stream body.
func NewStream(body io.ReadCloser, includeUsage bool, created int64) *Stream {
	return &Stream{body: body, rd: sse.NewReader(body), includeUsage: includeUsage, created: created}
}

// leadingError reads the first event: when it is an error event, it returns
// the status that error stands for and an OpenAI-style error body.
func (s *Stream) leadingError() (int, []byte, bool) {
	for {
		ev, err := s.rd.Next()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // ended before any event: not a clean, empty answer
			}
			s.err = err
			return 0, nil, false
		}
		data := sse.Data(ev)
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		if gjson.GetBytes(data, "type").String() == "error" {
			e := gjson.GetBytes(data, "error")
			return ErrorStatus(e.Get("type").String()), errorBody(e), true
		}
		s.pending = bytes.Clone(data)
		return 0, nil, false
	}
}

func errorBody(e gjson.Result) []byte {
	out := append([]byte(nil), `{"error":{"message":`...)
	out = wire.AppendString(out, e.Get("message").String())
	out = append(out, `,"type":`...)
	typ := e.Get("type").String()
	out = wire.AppendString(out, typ)
	out = append(out, `,"code":`...)
	out = wire.AppendString(out, typ)
	return append(out, "}}"...)
}

// Read implements io.Reader.
func (s *Stream) Read(p []byte) (int, error) {
	for s.off >= len(s.out) {
		if s.err != nil {
			return 0, s.err
		}
		s.out, s.off = s.out[:0], 0
		s.next()
	}
	n := copy(p, s.out[s.off:])
	s.off += n
	return n, nil
}

// Close closes the upstream body.
func (s *Stream) Close() error {
	if s.rd != nil {
		s.rd.Release()
		s.rd = nil
	}
	return s.body.Close()
}

// next translates one upstream event into s.out, or sets s.err.
func (s *Stream) next() {
	var data []byte
	if s.pending != nil {
		data, s.pending = s.pending, nil
	} else {
		if s.err != nil {
			return
		}
		ev, err := s.rd.Next()
		if err != nil {
			if err == io.EOF && !s.done {
				err = io.ErrUnexpectedEOF // ended without message_stop
			}
			s.err = err
			return
		}
		data = sse.Data(ev)
	}
	s.translate(data)
}

// translate appends the OpenAI chunks for one Anthropic event.
func (s *Stream) translate(data []byte) {
	if len(bytes.TrimSpace(data)) == 0 {
		return
	}
	ev := gjson.ParseBytes(data)
	switch ev.Get("type").String() {
	case "message_start":
		m := ev.Get("message")
		s.prefix = append(s.prefix[:0], `data: {"id":`...)
		s.prefix = wire.AppendString(s.prefix, m.Get("id").String())
		s.prefix = append(s.prefix, `,"object":"chat.completion.chunk","created":`...)
		s.prefix = strconv.AppendInt(s.prefix, s.created, 10)
		s.prefix = append(s.prefix, `,"model":`...)
		s.prefix = wire.AppendString(s.prefix, m.Get("model").String())
		s.prefix = append(s.prefix, `,"choices":[{"index":0,"delta":`...)
		s.readUsage(m.Get("usage"))
		s.started = true
		s.chunk([]byte(`{"role":"assistant","content":""}`), "null")
	case "content_block_start":
		b := ev.Get("content_block")
		switch b.Get("type").String() {
		case "text":
			if t := b.Get("text").String(); t != "" {
				s.delta("content", t)
			}
		case "redacted_thinking":
			d := append(s.scratch[:0], `{"thinking_blocks":[`...)
			d = appendRedactedBlock(d, b.Get("data").String())
			s.scratch = append(d, "]}"...)
			s.chunk(s.scratch, "null")
		case "tool_use":
			if s.tools == nil {
				s.tools = map[int64]int{}
			}
			if s.jsonMode && b.Get("name").String() == JSONToolName {
				// Its input streams as content (LiteLLM's JSON mode).
				s.tools[ev.Get("index").Int()] = jsonBlock
				s.jsonAnswer = true
				return
			}
			i := s.nTools
			s.nTools++
			s.tools[ev.Get("index").Int()] = i
			d := append([]byte(nil), `{"tool_calls":[{"index":`...)
			d = strconv.AppendInt(d, int64(i), 10)
			d = append(d, `,"id":`...)
			d = wire.AppendString(d, b.Get("id").String())
			d = append(d, `,"type":"function","function":{"name":`...)
			d = wire.AppendString(d, b.Get("name").String())
			d = append(d, `,"arguments":""}}]}`...)
			s.chunk(d, "null")
		}
	case "content_block_delta":
		d := ev.Get("delta")
		switch d.Get("type").String() {
		case "text_delta":
			s.delta("content", d.Get("text").String())
		case "thinking_delta":
			// The text as reasoning_content, and as a thinking block (as
			// LiteLLM streams it) for clients that rebuild thinking_blocks.
			t := d.Get("thinking").String()
			if t == "" {
				return
			}
			b := append(s.scratch[:0], `{"reasoning_content":`...)
			b = wire.AppendString(b, t)
			b = append(b, `,"thinking_blocks":[`...)
			b = appendThinkingBlock(b, t, "")
			s.scratch = append(b, "]}"...)
			s.chunk(s.scratch, "null")
		case "signature_delta":
			// The signature Anthropic wants back with the thinking.
			sig := d.Get("signature").String()
			if sig == "" {
				return
			}
			b := append(s.scratch[:0], `{"thinking_blocks":[`...)
			b = appendThinkingBlock(b, "", sig)
			s.scratch = append(b, "]}"...)
			s.chunk(s.scratch, "null")
		case "input_json_delta":
			part := d.Get("partial_json").String()
			if part == "" {
				return
			}
			i := s.tools[ev.Get("index").Int()]
			if i == jsonBlock {
				s.delta("content", part)
				return
			}
			b := append([]byte(nil), `{"tool_calls":[{"index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"function":{"arguments":`...)
			b = wire.AppendString(b, part)
			b = append(b, "}}]}"...)
			s.chunk(b, "null")
		}
	case "message_delta":
		s.readUsage(ev.Get("usage"))
		if stop := ev.Get("delta.stop_reason"); stop.Type == gjson.String {
			finish := FinishReason(stop.Str)
			if s.jsonAnswer && finish == "tool_calls" {
				finish = "stop"
			}
			s.chunk([]byte("{}"), `"`+finish+`"`)
		}
	case "message_stop":
		if s.includeUsage {
			s.start() // a stop with no message_start: the prefix is still empty
			s.out = append(s.out, s.prefix[:len(s.prefix)-len(`{"index":0,"delta":`)]...)
			s.out = append(s.out, `],"usage":`...)
			s.out = wire.AppendUsage(s.out, s.input, s.output, s.cacheRead, s.cacheWrite)
			s.out = append(s.out, "}\n\n"...)
		}
		s.out = append(s.out, "data: [DONE]\n\n"...)
		s.done = true
		s.err = io.EOF
	case "error":
		s.out = append(s.out, "data: "...)
		s.out = append(s.out, errorBody(ev.Get("error"))...)
		s.out = append(s.out, "\n\n"...)
		s.done = true
		s.err = io.EOF
	}
	// ping, content_block_stop and unknown events add nothing
}

func (s *Stream) readUsage(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	u.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			s.input = v.Int()
		case "output_tokens":
			s.output = v.Int()
		case "cache_read_input_tokens":
			s.cacheRead = v.Int()
		case "cache_creation_input_tokens":
			s.cacheWrite = v.Int()
		}
		return true
	})
}

func (s *Stream) delta(field, text string) {
	if text == "" {
		return
	}
	b := append(s.scratch[:0], `{"`...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = wire.AppendString(b, text)
	b = append(b, '}')
	s.scratch = b
	s.chunk(b, "null")
}

// start gives a stream that skipped message_start (not Anthropic's
// protocol) a chunk prefix without id and model.
func (s *Stream) start() {
	if !s.started {
		s.prefix = append(s.prefix[:0], `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":`...)
		s.started = true
	}
}

func (s *Stream) chunk(delta []byte, finish string) {
	s.start()
	s.out = append(s.out, s.prefix...)
	s.out = append(s.out, delta...)
	s.out = append(s.out, `,"finish_reason":`...)
	s.out = append(s.out, finish...)
	s.out = append(s.out, "}]}\n\n"...)
}
