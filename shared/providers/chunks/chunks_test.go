package chunks

import (
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/sluice-gw/sluice/shared/wire"
)

// script is a Decoder that plays one step per Decode.
type script struct {
	Stream
	steps  []func(s *Stream) error
	closed bool
}

func (d *script) Decode() error {
	if len(d.steps) == 0 {
		return io.ErrUnexpectedEOF
	}
	step := d.steps[0]
	d.steps = d.steps[1:]
	return step(&d.Stream)
}

func (d *script) CloseUpstream() error { d.closed = true; return nil }

func play(prefix bool, steps ...func(s *Stream) error) *script {
	d := &script{steps: steps}
	d.Init(d)
	if prefix {
		d.SetPrefix("id-1", 7, "m\"x")
	}
	return d
}

func TestStream(t *testing.T) {
	d := play(true,
		func(s *Stream) error { s.Role(); return nil },
		func(s *Stream) error { return nil }, // an event that adds nothing
		func(s *Stream) error { s.Delta("content", "hé\n"); s.Delta("content", ""); return nil },
		func(s *Stream) error { s.ToolCallStart(0, "call_1", "f"); s.ToolCallArgs(0, `{"a":`); return nil },
		func(s *Stream) error { s.Finish("tool_calls"); s.Usage(3, 4, 1, 0); s.Done(); return io.EOF },
	)
	got, err := io.ReadAll(iotest.OneByteReader(&d.Stream))
	if err != nil {
		t.Fatal(err)
	}
	const p = `data: {"id":"id-1","object":"chat.completion.chunk","created":7,"model":"m\"x","choices":[{"index":0,"delta":`
	want := p + `{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
		p + `{"content":"hé\n"},"finish_reason":null}]}` + "\n\n" +
		p + `{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}` + "\n\n" +
		p + `{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]},"finish_reason":null}]}` + "\n\n" +
		p + `{},"finish_reason":"tool_calls"}]}` + "\n\n" +
		`data: {"id":"id-1","object":"chat.completion.chunk","created":7,"model":"m\"x","choices":[],"usage":` + string(wire.AppendUsage(nil, 3, 4, 1, 0)) + "}\n\n" +
		"data: [DONE]\n\n"
	if string(got) != want {
		t.Errorf("stream\n%s\nwant\n%s", got, want)
	}
	if err := d.Close(); err != nil || !d.closed {
		t.Errorf("Close = %v, upstream closed %v", err, d.closed)
	}
}

func TestStreamWithoutPrefix(t *testing.T) {
	d := play(false,
		func(s *Stream) error { s.Delta("reasoning_content", "r"); return nil },
		func(s *Stream) error { s.Event([]byte(`{"error":{"message":"x"}}`)); return io.EOF },
	)
	got, err := io.ReadAll(&d.Stream)
	want := `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"reasoning_content":"r"},"finish_reason":null}]}` + "\n\n" +
		`data: {"error":{"message":"x"}}` + "\n\n"
	if err != nil || string(got) != want {
		t.Errorf("stream %q, %v\nwant %q", got, err, want)
	}
}

func TestStreamError(t *testing.T) {
	boom := errors.New("boom")
	d := play(true,
		func(s *Stream) error { s.Role(); return boom }, // the chunks first, then the error
	)
	got, err := io.ReadAll(&d.Stream)
	if !errors.Is(err, boom) || len(got) == 0 {
		t.Errorf("read %q, %v; want the role chunk, then %v", got, err, boom)
	}
	if _, err := d.Read(make([]byte, 8)); !errors.Is(err, boom) {
		t.Errorf("read after the error: %v, want it again", err)
	}
}
