package gemini

import (
	"bytes"
	"io"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/providers/chunks"
)

// decoder translates Gemini's SSE stream (each event a whole
// GenerateContentResponse holding the next parts, usageMetadata counting
// so far, and finishReason at the end) into OpenAI chunks (a
// chunks.Decoder), one upstream event at a time.
type decoder struct {
	chunks.Stream
	up           chunks.Upstream
	o            Options
	includeUsage bool
	created      int64

	started bool
	nCalls  int
	finish  string // the finish reason sent; "" until one is
	usage   []byte // the last usageMetadata (counts so far)
}

// NewStream returns the OpenAI SSE stream of a streamGenerateContent
// (alt=sse) body. includeUsage adds the usage chunk before [DONE].
func NewStream(body io.ReadCloser, o Options, includeUsage bool, created int64) io.ReadCloser {
	return &newDecoder(body, o, includeUsage, created).Stream
}

func newDecoder(body io.ReadCloser, o Options, includeUsage bool, created int64) *decoder {
	s := &decoder{up: chunks.NewUpstream(body), o: o, includeUsage: includeUsage, created: created}
	s.Init(s)
	return s
}

// leadingError reads the first event: when it is an error, or a prompt
// Gemini's safety filters blocked, it returns the status it stands for and
// an OpenAI-style error body.
func (s *decoder) leadingError() (int, []byte, bool) {
	data, err := s.up.Lead()
	if err != nil {
		return 0, nil, false
	}
	if e := gjson.GetBytes(data, "error"); e.IsObject() {
		return errorStatus(e), openAIError(e), true
	}
	return Blocked(data)
}

// CloseUpstream closes the upstream body.
func (s *decoder) CloseUpstream() error { return s.up.Close() }

// Decode translates the next upstream event.
func (s *decoder) Decode() error {
	data, err := s.up.Next()
	if err == io.EOF {
		return s.end()
	}
	if err != nil {
		return err
	}
	return s.translate(data)
}

// end ends a stream whose upstream ended: cleanly after a finish reason,
// else as a truncated stream.
func (s *decoder) end() error {
	if s.finish == "" {
		return io.ErrUnexpectedEOF
	}
	if s.includeUsage {
		u := ReadUsage(gjson.ParseBytes(s.usage))
		s.Usage(u.Input, u.Output, u.Cached, 0)
	}
	s.Done()
	return io.EOF
}

// translate appends the OpenAI chunks of one Gemini event.
func (s *decoder) translate(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if !gjson.ValidBytes(data) {
		return errNotResponse
	}
	ev := gjson.ParseBytes(data)
	if e := ev.Get("error"); e.IsObject() {
		s.Event(openAIError(e))
		return io.EOF
	}
	if !s.started {
		s.started = true
		model := ev.Get("modelVersion").String()
		if model == "" {
			model = s.o.Model
		}
		s.SetPrefix(responseID(ev), s.created, model)
		s.Role()
	}
	if u := ev.Get("usageMetadata"); u.IsObject() {
		s.usage = append(s.usage[:0], u.Raw...) // a copy: data is the reader's buffer
	}
	c := ev.Get("candidates.0")
	c.Get("content.parts").ForEach(func(_, p gjson.Result) bool {
		switch {
		case p.Get("functionCall").IsObject():
			id, name, args := callOf(p)
			s.ToolCallStart(s.nCalls, id, name)
			s.ToolCallArgs(s.nCalls, args)
			s.nCalls++
		case p.Get("thought").Bool():
			s.Delta("reasoning_content", p.Get("text").String())
		default:
			s.Delta("content", p.Get("text").String())
		}
		return true
	})
	if fr := c.Get("finishReason").String(); fr != "" && s.finish == "" {
		s.finish = FinishReason(fr)
		if s.nCalls > 0 && s.finish == "stop" {
			s.finish = "tool_calls"
		}
		s.Finish(s.finish)
	}
	if b := ev.Get("promptFeedback.blockReason").String(); b != "" && s.finish == "" {
		s.finish = "content_filter"
		s.Finish(s.finish)
	}
	return nil
}
