package bedrock

import (
	"io"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/providers/chunks"
)

// EventSource is a Converse event stream (*bedrockruntime.ConverseStreamEventStream).
type EventSource interface {
	Events() <-chan types.ConverseStreamOutput
	Err() error
	Close() error
}

// decoder translates a Converse event stream into OpenAI chunks (a
// chunks.Decoder), one event at a time.
type decoder struct {
	chunks.Stream
	src          EventSource
	includeUsage bool
	d            *config.Deployment // its errors are classified (nil: as they are)

	pending types.ConverseStreamOutput
	stopped bool          // messageStop came: the answer is complete
	tools   map[int32]int // content block index -> tool call index (jsonBlock: the answer's JSON)
	nTools  int

	jsonMode   bool // a json_tool_call tool use is the answer's content
	jsonAnswer bool // one was: the finish reason is stop
}

// jsonBlock marks, in decoder.tools, the json_tool_call block of JSON mode.
const jsonBlock = -1

// NewStream returns the OpenAI SSE stream of src, for model.
func NewStream(src EventSource, model string, includeUsage bool, created int64) *chunks.Stream {
	return &newDecoder(src, model, includeUsage, created).Stream
}

func newDecoder(src EventSource, model string, includeUsage bool, created int64) *decoder {
	s := &decoder{src: src, includeUsage: includeUsage}
	s.Init(s)
	s.SetPrefix(newID(), created, model)
	return s
}

func (s *decoder) classify(err error) error {
	if s.d == nil {
		return err
	}
	return Classify(s.d, err)
}

// first waits for the first event; an exception instead is returned.
func (s *decoder) first() error {
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

// CloseUpstream ends the upstream stream.
func (s *decoder) CloseUpstream() error {
	s.src.Close()
	return nil
}

// Decode translates the next Converse event.
func (s *decoder) Decode() error {
	ev := s.pending
	s.pending = nil
	if ev == nil {
		var ok bool
		if ev, ok = <-s.src.Events(); !ok {
			switch err := s.src.Err(); {
			case err != nil:
				return s.classify(err)
			case s.stopped: // no metadata event: end without usage
				s.Done()
				return io.EOF
			default:
				return io.ErrUnexpectedEOF
			}
		}
	}
	return s.translate(ev)
}

// translate appends the OpenAI chunks for one Converse stream event; it
// returns io.EOF after the last.
func (s *decoder) translate(ev types.ConverseStreamOutput) error {
	switch ev := ev.(type) {
	case *types.ConverseStreamOutputMemberMessageStart:
		s.Role()
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if t, ok := ev.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			if s.tools == nil {
				s.tools = map[int32]int{}
			}
			if s.jsonMode && deref(t.Value.Name) == anthropic.JSONToolName {
				// Its input streams as content (LiteLLM's JSON mode).
				s.tools[i32ptr(ev.Value.ContentBlockIndex)] = jsonBlock
				s.jsonAnswer = true
				return nil
			}
			i := s.nTools
			s.nTools++
			s.tools[i32ptr(ev.Value.ContentBlockIndex)] = i
			s.ToolCallStart(i, deref(t.Value.ToolUseId), deref(t.Value.Name))
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		switch d := ev.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			s.Delta("content", d.Value)
		case *types.ContentBlockDeltaMemberReasoningContent:
			if t, ok := d.Value.(*types.ReasoningContentBlockDeltaMemberText); ok {
				s.Delta("reasoning_content", t.Value)
			}
		case *types.ContentBlockDeltaMemberToolUse:
			if d.Value.Input == nil || *d.Value.Input == "" {
				return nil
			}
			if i := s.tools[i32ptr(ev.Value.ContentBlockIndex)]; i == jsonBlock {
				s.Delta("content", *d.Value.Input)
			} else {
				s.ToolCallArgs(i, *d.Value.Input)
			}
		}
	case *types.ConverseStreamOutputMemberMessageStop:
		s.stopped = true
		finish := FinishReason(ev.Value.StopReason)
		if s.jsonAnswer && finish == "tool_calls" {
			finish = "stop"
		}
		s.Finish(finish)
	case *types.ConverseStreamOutputMemberMetadata:
		if s.includeUsage {
			in, out, read, write := usage(ev.Value.Usage)
			s.Usage(in, out, read, write)
		}
		if s.stopped {
			s.Done()
			return io.EOF
		}
	}
	return nil
}

func i32ptr(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
