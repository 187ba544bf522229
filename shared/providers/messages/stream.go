package messages

import (
	"errors"
	"io"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/providers/chunks"
	"github.com/sluice-gw/sluice/shared/sse"
	"github.com/sluice-gw/sluice/shared/wire"
)

// stream translates a chat completions SSE stream into a Messages event
// stream, one upstream chunk at a time, as an io.ReadCloser: message_start
// and a ping with the first chunk, a content block per text run or tool
// call (content_block_start, its text_delta or input_json_delta events,
// content_block_stop), then message_delta with the stop reason and the
// usage, and message_stop.
type stream struct {
	body  io.ReadCloser
	rd    *sse.Reader
	model string

	chunks.Reader // the translated events not yet read

	started  bool
	open     bool   // a content block is open
	kind     byte   // its kind: 't' text, 'u' tool use
	tool     int64  // the chat tool call index of an open tool use block
	toolID   string // and its id
	index    int    // the open block's index (or the next one's)
	stop     string // the stop reason, from the finish reason
	finished bool   // a finish reason came
	usage    wire.Usage
}

func newStream(body io.ReadCloser, model string) *stream {
	s := &stream{body: body, rd: sse.NewReader(body), model: model}
	s.Init(s)
	return s
}

// Close closes the upstream stream.
func (s *stream) Close() error {
	s.rd.Release()
	return s.body.Close()
}

// decode reads one upstream event and appends the events it stands for.
func (s *stream) Fill() error {
	ev, err := s.rd.Next()
	if err != nil {
		if err == io.EOF && s.finished {
			s.end()
			return io.EOF
		}
		if err == io.EOF || errors.Is(err, sse.ErrTruncated) {
			return io.ErrUnexpectedEOF // ended before its answer did
		}
		return err
	}
	data := sse.Data(ev)
	if sse.IsDone(data) {
		if !s.started { // [DONE] and nothing else: not an answer
			return io.ErrUnexpectedEOF
		}
		s.end()
		return io.EOF
	}
	if len(data) == 0 {
		return nil
	}
	if e := gjson.GetBytes(data, "error"); e.Exists() {
		s.NamedEvent("error", appendError(nil, e))
		return nil
	}
	if !s.started {
		s.begin(data)
	}
	if u, ok := wire.UsageOf(data); ok {
		s.usage = u
	}
	choice := gjson.GetBytes(data, "choices.0")
	if !choice.Exists() {
		return nil
	}
	delta := choice.Get("delta")
	if t := delta.Get("content"); t.Type == gjson.String && t.Str != "" {
		if !s.open || s.kind != 't' {
			s.startBlock('t', -1, `{"type":"text","text":""}`)
		}
		b := s.head("content_block_delta")
		b = append(b, `,"delta":{"type":"text_delta","text":`...)
		b = wire.AppendString(b, t.Str)
		s.NamedEvent("content_block_delta", append(b, "}}"...))
	}
	delta.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		idx := tc.Get("index").Int()
		id := tc.Get("id").Str
		if !(s.open && s.kind == 'u' && s.tool == idx) || (id != "" && id != s.toolID) {
			b := append([]byte(nil), `{"type":"tool_use","id":`...)
			b = wire.AppendString(b, id)
			b = append(b, `,"name":`...)
			b = wire.AppendString(b, tc.Get("function.name").Str)
			s.startBlock('u', idx, string(append(b, `,"input":{}}`...)))
			s.toolID = id
		}
		if args := tc.Get("function.arguments").Str; args != "" {
			b := s.head("content_block_delta")
			b = append(b, `,"delta":{"type":"input_json_delta","partial_json":`...)
			b = wire.AppendString(b, args)
			s.NamedEvent("content_block_delta", append(b, "}}"...))
		}
		return true
	})
	if f := choice.Get("finish_reason"); f.Type == gjson.String && f.Str != "" {
		s.stop, s.finished = stopReason(f.Str), true
	}
	return nil
}

// begin appends message_start and a ping.
func (s *stream) begin(data []byte) {
	s.started = true
	model := s.model
	if model == "" {
		model = gjson.GetBytes(data, "model").Str
	}
	b := append([]byte(nil), `{"type":"message_start","message":{"id":`...)
	b = wire.AppendString(b, messageID(gjson.GetBytes(data, "id").Str))
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = wire.AppendString(b, model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"output_tokens":0}}}`...)
	s.NamedEvent("message_start", b)
	s.NamedEvent("ping", []byte(`{"type":"ping"}`))
}

// startBlock closes the open block and opens one of kind with the
// content_block JSON cb.
func (s *stream) startBlock(kind byte, tool int64, cb string) {
	s.closeBlock()
	b := s.head("content_block_start")
	b = append(b, `,"content_block":`...)
	b = append(b, cb...)
	s.NamedEvent("content_block_start", append(b, '}'))
	s.open, s.kind, s.tool = true, kind, tool
}

func (s *stream) closeBlock() {
	if !s.open {
		return
	}
	s.NamedEvent("content_block_stop", append(s.head("content_block_stop"), '}'))
	s.open = false
	s.index++
}

// end appends the closing events.
func (s *stream) end() {
	s.closeBlock()
	if s.stop == "" {
		s.stop = "end_turn"
	}
	b := append([]byte(nil), `{"type":"message_delta","delta":{"stop_reason":`...)
	b = wire.AppendString(b, s.stop)
	b = append(b, `,"stop_sequence":null},"usage":`...)
	b = usageJSON(b, s.usage)
	s.NamedEvent("message_delta", append(b, '}'))
	s.NamedEvent("message_stop", []byte(`{"type":"message_stop"}`))
}

// head starts an event of the open (or next) block: {"type":...,"index":n.
func (s *stream) head(typ string) []byte {
	b := append([]byte(nil), `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","index":`...)
	return strconv.AppendInt(b, int64(s.index), 10)
}

// appendError appends an Anthropic error body for a chat stream's error.
func appendError(b []byte, e gjson.Result) []byte {
	msg := e.Get("message").Str
	if msg == "" {
		msg = e.String()
	}
	b = append(b, `{"type":"error","error":{"type":"api_error","message":`...)
	b = wire.AppendString(b, msg)
	return append(b, "}}"...)
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }
