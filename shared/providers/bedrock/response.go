package bedrock

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/transport/http/protocol/restjson1"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

var seq atomic.Uint64

func newID() string {
	return "chatcmpl-bedrock-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatUint(seq.Add(1), 36)
}

// Do sends call to d through Converse or ConverseStream. A response has
// status 200 and an OpenAI-shaped body; every Bedrock failure is an
// *apierr.Error, including an exception that arrives as the first frame of
// a stream (it becomes the status it stands for, never a 200).
func (c *Clients) Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	modelID := ModelID(d.Model)
	if d.Model == "*" || d.Model == "" {
		modelID = ModelID(jsonString(call.Body, "model"))
	}
	if call.Op == wire.OpEmbeddings {
		cl, err := c.Client(ctx, d)
		if err != nil {
			return nil, &apierr.Error{Kind: apierr.UpstreamAuth, Message: "could not load AWS credentials for deployment " + d.ID, Cause: err}
		}
		return embed(ctx, cl, d, modelID, call.Body)
	}
	req, err := TranslateRequest(call.Body, modelID)
	if err != nil {
		return nil, err
	}
	cl, err := c.Client(ctx, d)
	if err != nil {
		return nil, &apierr.Error{Kind: apierr.UpstreamAuth, Message: "could not load AWS credentials for deployment " + d.ID, Cause: err}
	}
	created := time.Now().Unix()
	if !call.Stream {
		out, err := cl.Converse(ctx, &req.Input)
		if err != nil {
			return nil, Classify(d, err)
		}
		return response("application/json", io.NopCloser(bytes.NewReader(TranslateOutput(out, modelID, created)))), nil
	}
	out, err := cl.ConverseStream(ctx, req.StreamInput(), ownCodec)
	if err != nil {
		return nil, Classify(d, err)
	}
	es := out.GetStream()
	s := NewStream(es, modelID, req.IncludeUsage, created)
	s.classify = func(err error) error { return Classify(d, err) }
	if err := s.first(); err != nil { // an exception before any event
		es.Close()
		return nil, err
	}
	return response("text/event-stream", s), nil
}

// ownCodec gives a stream a protocol of its own. The SDK's restJson1
// protocol decodes event streams with one decoder and one payload buffer
// per instance, and a client holds one instance: two streams of a
// deployment at once (a local gateway serves many) would decode into the
// same buffer (smithy-go v1.28.9; the race detector sees it in
// TestConcurrentStreams). The protocol's service schema argument is unused.
func ownCodec(o *bedrockruntime.Options) { o.Protocol = restjson1.New(nil) }

func response(contentType string, body io.ReadCloser) *http.Response {
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {contentType}}, Body: body, ContentLength: -1,
	}
}

// FinishReason maps a Converse stop reason to OpenAI's finish_reason.
func FinishReason(r types.StopReason) string {
	switch r {
	case types.StopReasonMaxTokens, types.StopReasonModelContextWindowExceeded:
		return "length"
	case types.StopReasonToolUse:
		return "tool_calls"
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		return "content_filter"
	default:
		return "stop"
	}
}

// TranslateOutput turns a Converse answer into an OpenAI chat completion.
func TranslateOutput(out *bedrockruntime.ConverseOutput, model string, created int64) []byte {
	b := wire.AppendCompletionHead(make([]byte, 0, 512), newID(), created, model)
	var text, reasoning, calls []byte
	n := 0
	if m, ok := out.Output.(*types.ConverseOutputMemberMessage); ok {
		for _, c := range m.Value.Content {
			switch c := c.(type) {
			case *types.ContentBlockMemberText:
				text = append(text, c.Value...)
			case *types.ContentBlockMemberReasoningContent:
				if r, ok := c.Value.(*types.ReasoningContentBlockMemberReasoningText); ok && r.Value.Text != nil {
					reasoning = append(reasoning, *r.Value.Text...)
				}
			case *types.ContentBlockMemberToolUse:
				args := "{}"
				if c.Value.Input != nil {
					if j, err := c.Value.Input.MarshalSmithyDocument(); err == nil {
						args = string(j)
					}
				}
				calls = wire.AppendToolCall(calls, n, deref(c.Value.ToolUseId), deref(c.Value.Name), args)
				n++
			}
		}
	}
	b = wire.AppendMessageEnd(b, text, reasoning, nil, calls, n, FinishReason(out.StopReason))
	b = appendUsage(b, out.Usage)
	return append(b, '}')
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func i32(p *int32) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

// appendUsage writes OpenAI usage: Converse's inputTokens exclude cache
// reads and writes; prompt_tokens include them, reads as cached_tokens.
func appendUsage(b []byte, u *types.TokenUsage) []byte {
	var in, out, read, write int64
	if u != nil {
		in, out, read, write = i32(u.InputTokens), i32(u.OutputTokens), i32(u.CacheReadInputTokens), i32(u.CacheWriteInputTokens)
	}
	return wire.AppendUsage(b, in, out, read, write)
}

// EventSource is a Converse event stream (*bedrockruntime.ConverseStreamEventStream).
type EventSource interface {
	Events() <-chan types.ConverseStreamOutput
	Err() error
	Close() error
}

// Stream turns a Converse event stream into OpenAI SSE chunks, one event at
// a time.
type Stream struct {
	src          EventSource
	includeUsage bool
	classify     func(error) error

	prefix  []byte
	out     []byte
	off     int
	err     error
	pending types.ConverseStreamOutput
	stopped bool // messageStop came: the answer is complete
	tools   map[int32]int
	nTools  int
	scratch []byte
}

// NewStream returns a Stream over src for model.
func NewStream(src EventSource, model string, includeUsage bool, created int64) *Stream {
	s := &Stream{src: src, includeUsage: includeUsage, classify: func(err error) error { return err }}
	s.prefix = append(s.prefix, `data: {"id":`...)
	s.prefix = wire.AppendString(s.prefix, newID())
	s.prefix = append(s.prefix, `,"object":"chat.completion.chunk","created":`...)
	s.prefix = strconv.AppendInt(s.prefix, created, 10)
	s.prefix = append(s.prefix, `,"model":`...)
	s.prefix = wire.AppendString(s.prefix, model)
	s.prefix = append(s.prefix, `,"choices":[{"index":0,"delta":`...)
	return s
}

// first waits for the first event; an exception instead is returned.
func (s *Stream) first() error {
	ev, ok := <-s.src.Events()
	if !ok {
		if err := s.src.Err(); err != nil {
			return s.classify(err)
		}
		return apierr.New(apierr.UpstreamConnection, "the Bedrock stream ended before its first event")
	}
	s.pending = ev
	return nil
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

// Close ends the upstream stream.
func (s *Stream) Close() error {
	s.src.Close()
	return nil
}

func (s *Stream) next() {
	ev := s.pending
	s.pending = nil
	if ev == nil {
		var ok bool
		if ev, ok = <-s.src.Events(); !ok {
			switch err := s.src.Err(); {
			case err != nil:
				s.err = s.classify(err)
			case s.stopped: // no metadata event: end without usage
				s.out = append(s.out, "data: [DONE]\n\n"...)
				s.err = io.EOF
			default:
				s.err = io.ErrUnexpectedEOF
			}
			return
		}
	}
	s.Translate(ev)
}

// Translate appends the OpenAI chunks for one Converse stream event.
func (s *Stream) Translate(ev types.ConverseStreamOutput) {
	switch ev := ev.(type) {
	case *types.ConverseStreamOutputMemberMessageStart:
		s.chunk(`{"role":"assistant","content":""}`, "null")
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if t, ok := ev.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			if s.tools == nil {
				s.tools = map[int32]int{}
			}
			i := s.nTools
			s.nTools++
			s.tools[i32ptr(ev.Value.ContentBlockIndex)] = i
			b := append(s.scratch[:0], `{"tool_calls":[{"index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"id":`...)
			b = wire.AppendString(b, deref(t.Value.ToolUseId))
			b = append(b, `,"type":"function","function":{"name":`...)
			b = wire.AppendString(b, deref(t.Value.Name))
			b = append(b, `,"arguments":""}}]}`...)
			s.scratch = b
			s.chunk(string(b), "null")
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		switch d := ev.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			s.delta("content", d.Value)
		case *types.ContentBlockDeltaMemberReasoningContent:
			if t, ok := d.Value.(*types.ReasoningContentBlockDeltaMemberText); ok {
				s.delta("reasoning_content", t.Value)
			}
		case *types.ContentBlockDeltaMemberToolUse:
			if d.Value.Input == nil || *d.Value.Input == "" {
				return
			}
			b := append(s.scratch[:0], `{"tool_calls":[{"index":`...)
			b = strconv.AppendInt(b, int64(s.tools[i32ptr(ev.Value.ContentBlockIndex)]), 10)
			b = append(b, `,"function":{"arguments":`...)
			b = wire.AppendString(b, *d.Value.Input)
			b = append(b, "}}]}"...)
			s.scratch = b
			s.chunk(string(b), "null")
		}
	case *types.ConverseStreamOutputMemberMessageStop:
		s.stopped = true
		s.chunk("{}", `"`+FinishReason(ev.Value.StopReason)+`"`)
	case *types.ConverseStreamOutputMemberMetadata:
		if s.includeUsage {
			s.out = append(s.out, s.prefix[:len(s.prefix)-len(`{"index":0,"delta":`)]...)
			s.out = append(s.out, `],"usage":`...)
			s.out = appendUsage(s.out, ev.Value.Usage)
			s.out = append(s.out, "}\n\n"...)
		}
		if s.stopped {
			s.out = append(s.out, "data: [DONE]\n\n"...)
			s.err = io.EOF
		}
	}
}

func i32ptr(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
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
	s.out = append(s.out, s.prefix...)
	s.out = append(s.out, b...)
	s.out = append(s.out, `,"finish_reason":null}]}`+"\n\n"...)
}

func (s *Stream) chunk(delta, finish string) {
	s.out = append(s.out, s.prefix...)
	s.out = append(s.out, delta...)
	s.out = append(s.out, `,"finish_reason":`...)
	s.out = append(s.out, finish...)
	s.out = append(s.out, "}]}\n\n"...)
}

func jsonString(body []byte, key string) string {
	return gjson.GetBytes(body, key).String()
}
