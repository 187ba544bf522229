// Package chunkstest reads translated streams in tests as an OpenAI client
// reads them, checking the framing package chunks promises.
package chunkstest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/sse"
)

// Events returns the data of each event of an SSE body, until its end or
// the error that ended it.
func Events(r io.Reader) ([]string, error) {
	rd := sse.NewReader(r)
	defer rd.Release()
	var out []string
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, string(sse.Data(ev)))
	}
}

// Streamed returns the events' data of a streamed answer, failing t on an
// error, to be called on what a Do returns: Streamed(t)(p.Do(...)).
func Streamed(t testing.TB) func(*http.Response, error) []string {
	return answer(t, Events)
}

// Body returns the body of a unary answer, failing t on an error, to be
// called on what a Do returns: Body(t)(p.Do(...)).
func Body(t testing.TB) func(*http.Response, error) []byte {
	return answer(t, io.ReadAll)
}

// answer returns what read makes of an answer's body, failing t on the
// error of the call or of read. The body is closed.
func answer[T any](t testing.TB, read func(io.Reader) (T, error)) func(*http.Response, error) T {
	return func(resp *http.Response, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		v, err := read(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// Read reads a translated stream and returns its events' data. It fails t
// on an event that is not one data line, a chunk that is not a JSON
// chat.completion.chunk with choices, an event or an error after the end
// ([DONE], or an error event with a message), or a clean end before it.
// A stream cut by an error before its end is no failure: err says why.
func Read(t testing.TB, body io.Reader) (events []string, err error) {
	t.Helper()
	rd := sse.NewReader(body)
	defer rd.Release()
	ended := false
	for {
		ev, err := rd.Next()
		if err != nil {
			if err == io.EOF && !ended {
				t.Fatalf("a clean end without [DONE] or an error event; events %q", events)
			}
			if err != io.EOF && ended {
				t.Fatalf("error %v after the end", err)
			}
			if err == io.EOF {
				err = nil
			}
			return events, err
		}
		if ended {
			t.Fatalf("event after the end: %q", ev)
		}
		s := string(ev)
		if !strings.HasPrefix(s, "data: ") || !strings.HasSuffix(s, "\n\n") || strings.Count(s, "\n") != 2 {
			t.Fatalf("not one data line: %q", s)
		}
		data := sse.Data(ev)
		events = append(events, string(data))
		if sse.IsDone(data) {
			ended = true
			continue
		}
		if !json.Valid(data) {
			t.Fatalf("not JSON: %s", data)
		}
		c := gjson.ParseBytes(data)
		if e := c.Get("error"); e.Exists() {
			if e.Get("message").Type != gjson.String {
				t.Fatalf("error event %s", data)
			}
			ended = true
			continue
		}
		if c.Get("object").String() != "chat.completion.chunk" || !c.Get("choices").IsArray() {
			t.Fatalf("chunk %s", data)
		}
	}
}

// Deltas returns the text of field ("content", "reasoning_content") of the
// events' deltas (their first choice's), in order.
func Deltas(events []string, field string) string {
	var b strings.Builder
	path := "choices.0.delta." + field
	for _, ev := range events {
		b.WriteString(gjson.Get(ev, path).String())
	}
	return b.String()
}

// LeadingError fails t unless resp, a stream's answer that is not a 200,
// is a leading error: a 4xx or 5xx with an OpenAI error body, its message
// and type strings.
func LeadingError(t testing.TB, resp *http.Response) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	e := gjson.GetBytes(b, "error")
	if resp.StatusCode < 400 || !json.Valid(b) || e.Get("message").Type != gjson.String || e.Get("type").Type != gjson.String {
		t.Fatalf("leading error: status %d body %s", resp.StatusCode, b)
	}
}
