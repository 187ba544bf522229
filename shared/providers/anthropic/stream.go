package anthropic

import (
	"bytes"
	"io"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/providers/chunks"
	"github.com/sluice-gw/sluice/shared/wire"
)

// decoder translates Anthropic's event stream into OpenAI chunks (a
// chunks.Decoder), one upstream event at a time.
type decoder struct {
	chunks.Stream
	up           chunks.Upstream
	includeUsage bool
	created      int64

	tools      map[int64]int // content block index -> tool call index (jsonBlock: the answer's JSON)
	nTools     int
	jsonMode   bool // a json_tool_call tool use is the answer's content
	jsonAnswer bool // one was: the finish reason is stop
	input      int64
	output     int64
	cacheRead  int64
	cacheWrite int64
}

// jsonBlock marks, in decoder.tools, the json_tool_call block of JSON mode.
const jsonBlock = -1

// NewStream returns the OpenAI SSE stream of an Anthropic event stream body.
func NewStream(body io.ReadCloser, includeUsage bool, created int64) *chunks.Stream {
	return &newDecoder(body, includeUsage, created).Stream
}

func newDecoder(body io.ReadCloser, includeUsage bool, created int64) *decoder {
	s := &decoder{up: chunks.NewUpstream(body), includeUsage: includeUsage, created: created}
	s.Init(s)
	return s
}

// leadingError reads the first event: when it is an error event, it returns
// the status that error stands for and an OpenAI-style error body.
func (s *decoder) leadingError() (int, []byte, bool) {
	data, err := s.up.Lead()
	if err == nil && gjson.GetBytes(data, "type").String() == "error" {
		e := gjson.GetBytes(data, "error")
		return ErrorStatus(e.Get("type").String()), errorBody(e), true
	}
	return 0, nil, false
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

// CloseUpstream closes the upstream body.
func (s *decoder) CloseUpstream() error { return s.up.Close() }

// Decode translates the next upstream event.
func (s *decoder) Decode() error {
	data, err := s.up.Next()
	if err == io.EOF {
		return io.ErrUnexpectedEOF // ended without message_stop
	}
	if err != nil {
		return err
	}
	return s.translate(data)
}

// translate appends the OpenAI chunks for one Anthropic event; it returns
// io.EOF after the last.
func (s *decoder) translate(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	ev := gjson.ParseBytes(data)
	switch ev.Get("type").String() {
	case "message_start":
		m := ev.Get("message")
		s.SetPrefix(m.Get("id").String(), s.created, m.Get("model").String())
		s.readUsage(m.Get("usage"))
		s.Role()
	case "content_block_start":
		s.blockStart(ev)
	case "content_block_delta":
		s.blockDelta(ev)
	case "message_delta":
		s.readUsage(ev.Get("usage"))
		if stop := ev.Get("delta.stop_reason"); stop.Type == gjson.String {
			finish := FinishReason(stop.Str)
			if s.jsonAnswer && finish == "tool_calls" {
				finish = "stop"
			}
			s.Finish(finish)
		}
	case "message_stop":
		if s.includeUsage {
			s.Usage(s.input, s.output, s.cacheRead, s.cacheWrite)
		}
		s.Done()
		return io.EOF
	case "error":
		s.Event(errorBody(ev.Get("error")))
		return io.EOF
	}
	// ping, content_block_stop and unknown events add nothing
	return nil
}

// blockStart translates a content_block_start event.
func (s *decoder) blockStart(ev gjson.Result) {
	b := ev.Get("content_block")
	switch b.Get("type").String() {
	case "text":
		s.Delta("content", b.Get("text").String())
	case "redacted_thinking":
		d := append(s.Scratch[:0], `{"thinking_blocks":[`...)
		d = appendRedactedBlock(d, b.Get("data").String())
		s.Scratch = append(d, "]}"...)
		s.Chunk(s.Scratch)
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
		s.ToolCallStart(i, b.Get("id").String(), b.Get("name").String())
	}
}

// blockDelta translates a content_block_delta event.
func (s *decoder) blockDelta(ev gjson.Result) {
	d := ev.Get("delta")
	switch d.Get("type").String() {
	case "text_delta":
		s.Delta("content", d.Get("text").String())
	case "thinking_delta":
		// The text as reasoning_content, and as a thinking block (as
		// LiteLLM streams it) for clients that rebuild thinking_blocks.
		if t := d.Get("thinking").String(); t != "" {
			s.thinking(t, "")
		}
	case "signature_delta":
		// The signature Anthropic wants back with the thinking.
		if sig := d.Get("signature").String(); sig != "" {
			s.thinking("", sig)
		}
	case "input_json_delta":
		part := d.Get("partial_json").String()
		if part == "" {
			return
		}
		i := s.tools[ev.Get("index").Int()]
		if i == jsonBlock {
			s.Delta("content", part)
			return
		}
		s.ToolCallArgs(i, part)
	}
}

// thinking appends a chunk with one thinking block, and its text (if any)
// as reasoning_content.
func (s *decoder) thinking(text, signature string) {
	b := append(s.Scratch[:0], '{')
	if text != "" {
		b = append(b, `"reasoning_content":`...)
		b = wire.AppendString(b, text)
		b = append(b, ',')
	}
	b = append(b, `"thinking_blocks":[`...)
	b = appendThinkingBlock(b, text, signature)
	s.Scratch = append(b, "]}"...)
	s.Chunk(s.Scratch)
}

func (s *decoder) readUsage(u gjson.Result) {
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
