// Package chunks is the translated-stream reader of the vendors that speak
// another API than OpenAI's (Anthropic's events, Bedrock's ConverseStream):
// a vendor's decoder reads one upstream event at a time and appends the
// OpenAI chat.completion.chunk events it stands for; the Stream hands them
// out as an io.ReadCloser, an OpenAI SSE body like any other (no goroutine,
// no buffering beyond one event's chunks).
package chunks

import (
	"io"
	"strconv"

	"github.com/sluice-gw/sluice/shared/wire"
)

// A Decoder translates one provider's event stream into its Stream.
type Decoder interface {
	// Decode reads the next upstream event and appends its chunks (perhaps
	// none); it returns the error that ends the stream: io.EOF after the
	// last event, once its chunks are appended.
	Decode() error
	// CloseUpstream closes the upstream stream.
	CloseUpstream() error
}

// Stream is a translated stream. A vendor's decoder embeds it, passes
// itself to Init, and hands out the Stream as the response body.
type Stream struct {
	Reader
	dec    Decoder
	prefix []byte // `data: {"id":...,"model":...,"choices":[{"index":0,"delta":`

	// Scratch is a buffer the decoder may build a delta in, reused event
	// to event.
	Scratch []byte
}

// Init makes dec the decoder that fills s.
func (s *Stream) Init(dec Decoder) { s.dec = dec; s.Reader.Init(s) }

// Fill is the decoder's next event's chunks (Reader's Filler).
func (s *Stream) Fill() error { return s.dec.Decode() }

// Close closes the upstream stream.
func (s *Stream) Close() error { return s.dec.CloseUpstream() }

// SetPrefix sets the id, creation time and model every chunk carries.
func (s *Stream) SetPrefix(id string, created int64, model string) {
	s.prefix = append(s.prefix[:0], `data: {"id":`...)
	s.prefix = wire.AppendString(s.prefix, id)
	s.prefix = append(s.prefix, `,"object":"chat.completion.chunk","created":`...)
	s.prefix = strconv.AppendInt(s.prefix, created, 10)
	s.prefix = append(s.prefix, `,"model":`...)
	s.prefix = wire.AppendString(s.prefix, model)
	s.prefix = append(s.prefix, `,"choices":[{"index":0,"delta":`...)
}

// start gives a stream whose prefix was never set (its provider skipped
// the event that carries id and model) a prefix without them.
func (s *Stream) start() {
	if len(s.prefix) == 0 {
		s.prefix = append(s.prefix, `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":`...)
	}
}

// Chunk appends a chunk with delta (a JSON object) and no finish reason.
func (s *Stream) Chunk(delta []byte) {
	s.start()
	s.Out = append(s.Out, s.prefix...)
	s.Out = append(s.Out, delta...)
	s.Out = append(s.Out, `,"finish_reason":null}]}`+"\n\n"...)
}

// Role appends the first chunk of an answer: the assistant role, no content.
func (s *Stream) Role() { s.Chunk(roleDelta) }

var roleDelta = []byte(`{"role":"assistant","content":""}`)

// Finish appends the chunk that ends the answer, with its finish reason.
func (s *Stream) Finish(reason string) {
	s.start()
	s.Out = append(s.Out, s.prefix...)
	s.Out = append(s.Out, `{},"finish_reason":"`...)
	s.Out = append(s.Out, reason...)
	s.Out = append(s.Out, "\"}]}\n\n"...)
}

// Delta appends a chunk whose delta sets one text field (content,
// reasoning_content); an empty text appends nothing.
func (s *Stream) Delta(field, text string) {
	if text == "" {
		return
	}
	b := append(s.Scratch[:0], `{"`...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = wire.AppendString(b, text)
	s.Scratch = append(b, '}')
	s.Chunk(s.Scratch)
}

// ToolCallStart appends the chunk that opens tool call i: its id and name,
// no arguments yet.
func (s *Stream) ToolCallStart(i int, id, name string) {
	b := append(s.Scratch[:0], `{"tool_calls":[{"index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"id":`...)
	b = wire.AppendString(b, id)
	b = append(b, `,"type":"function","function":{"name":`...)
	b = wire.AppendString(b, name)
	s.Scratch = append(b, `,"arguments":""}}]}`...)
	s.Chunk(s.Scratch)
}

// ToolCallArgs appends a part of tool call i's arguments.
func (s *Stream) ToolCallArgs(i int, part string) {
	b := append(s.Scratch[:0], `{"tool_calls":[{"index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"function":{"arguments":`...)
	b = wire.AppendString(b, part)
	s.Scratch = append(b, "}}]}"...)
	s.Chunk(s.Scratch)
}

// Usage appends the usage chunk (no choices), as OpenAI sends it last when
// asked with stream_options.include_usage.
func (s *Stream) Usage(input, output, cacheRead, cacheWrite int64) {
	s.start()
	s.Out = append(s.Out, s.prefix[:len(s.prefix)-len(`{"index":0,"delta":`)]...)
	s.Out = append(s.Out, `],"usage":`...)
	s.Out = wire.AppendUsage(s.Out, input, output, cacheRead, cacheWrite)
	s.Out = append(s.Out, "}\n\n"...)
}

// Event appends an event with data as it is.
func (s *Stream) Event(data []byte) {
	s.Out = append(s.Out, "data: "...)
	s.Out = append(s.Out, data...)
	s.Out = append(s.Out, "\n\n"...)
}

// Done appends the end of the stream; the decoder then returns io.EOF.
func (s *Stream) Done() { s.Out = append(s.Out, "data: [DONE]\n\n"...) }

var _ io.ReadCloser = (*Stream)(nil)
