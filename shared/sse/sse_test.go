package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r io.Reader) ([]string, error) {
	t.Helper()
	rd := NewReader(r)
	defer rd.Release()
	var out []string
	for {
		ev, err := rd.Next()
		if err != nil {
			return out, err
		}
		out = append(out, string(ev))
	}
}

func TestReader(t *testing.T) {
	big := "data: " + strings.Repeat("x", 20000) + "\n\n"
	tests := []struct {
		name, in string
		want     []string
		err      error
	}{
		{"lf", "data: a\n\ndata: b\n\n", []string{"data: a\n\n", "data: b\n\n"}, io.EOF},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"data: a\r\n\r\n", "data: b\r\n\r\n"}, io.EOF},
		{"multi-line event", "event: x\ndata: a\ndata: b\n\n", []string{"event: x\ndata: a\ndata: b\n\n"}, io.EOF},
		{"truncated", "data: a\n\ndata: par", []string{"data: a\n\n"}, ErrTruncated},
		{"trailing newline only", "data: a\n\n\n", []string{"data: a\n\n"}, io.EOF},
		{"larger than the buffer", big + "data: [DONE]\n\n", []string{big, "data: [DONE]\n\n"}, io.EOF},
		{"empty", "", nil, io.EOF},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":     func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for _, tt := range tests {
		for rname, mk := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				got, err := readAll(t, mk(tt.in))
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				if strings.Join(got, "|") != strings.Join(tt.want, "|") {
					t.Fatalf("events = %q, want %q", got, tt.want)
				}
			})
		}
	}
}

// BeforeRead is called before each read of the source, and only then:
// never while a complete event is buffered.
func TestBeforeRead(t *testing.T) {
	src := &countingReader{r: strings.NewReader("data: a\n\ndata: b\n\ndata: c\n\n")}
	rd := NewReader(src)
	defer rd.Release()
	calls := 0
	rd.BeforeRead = func() { calls++ }
	for range 3 {
		if _, err := rd.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 || src.reads != 1 { // one read took all three events
		t.Fatalf("%d BeforeRead calls, %d reads after three events; want 1 and 1", calls, src.reads)
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("err = %v, want EOF", err)
	}
	if calls != src.reads {
		t.Fatalf("%d BeforeRead calls for %d reads", calls, src.reads)
	}
}

type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) { c.reads++; return c.r.Read(p) }

func TestData(t *testing.T) {
	for in, want := range map[string]string{
		"data: {\"a\":1}\n\n":            `{"a":1}`,
		"data:{\"a\":1}\r\n\r\n":         `{"a":1}`,
		"event: e\ndata: x\ndata: y\n\n": "x\ny",
		": comment\n\n":                  "",
		"data: [DONE]\n\n":               "[DONE]",
	} {
		if got := string(Data([]byte(in))); got != want {
			t.Errorf("Data(%q) = %q, want %q", in, got, want)
		}
	}
	if !IsDone([]byte(" [DONE] ")) || IsDone([]byte("DONE")) {
		t.Error("IsDone")
	}
}
