package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/providers/chunks/chunkstest"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
	"github.com/sluice-gw/sluice/shared/sse"
	"github.com/sluice-gw/sluice/shared/wire"
)

// FuzzTranslateRequest translates any OpenAI chat body to a Messages API
// body. Invariants: no panic; an error is a 400 (*apierr.Error of kind
// InvalidRequest); an answer is a JSON object with the model, messages of
// alternating user and assistant turns each with a non-empty content list,
// max_tokens > 0 and above any thinking budget, and tools with a name and
// an object input_schema.
//
// The seed corpus is in testdata/fuzz/FuzzTranslateRequest.
func FuzzTranslateRequest(f *testing.F) {
	f.Add([]byte(`{"model":"claude","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],"max_tokens":100}`), uint16(4096))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":9223372036854775807}}`), uint16(4096))
	f.Fuzz(func(t *testing.T, body []byte, defMax uint16) {
		def := int(defMax%8192) + 1
		out, err := anthropic.TranslateRequest(body, def)
		if providerstest.Refused(t, err) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("not JSON: %s\nfrom %s", out, body)
		}
		r := gjson.ParseBytes(out)
		if !r.IsObject() || r.Get("model").Type != gjson.String || !r.Get("messages").IsArray() {
			t.Fatalf("shape: %s", out)
		}
		prev := ""
		for i, m := range r.Get("messages").Array() {
			role := m.Get("role").String()
			if (role != "user" && role != "assistant") || role == prev {
				t.Fatalf("message %d: role %q after %q: %s", i, role, prev, out)
			}
			if c := m.Get("content"); !c.IsArray() || len(c.Array()) == 0 {
				t.Fatalf("message %d: content %s", i, c.Raw)
			}
			prev = role
		}
		if s := r.Get("system"); s.Exists() && (!s.IsArray() || len(s.Array()) == 0) {
			t.Fatalf("system %s", s.Raw)
		}
		mt := r.Get("max_tokens")
		if mt.Type != gjson.Number || mt.Int() <= 0 || strings.ContainsAny(mt.Raw, ".eE") {
			t.Fatalf("max_tokens %s", mt.Raw)
		}
		if b := r.Get("thinking.budget_tokens"); b.Type == gjson.Number && b.Int() > 0 && mt.Int() <= b.Int() {
			t.Fatalf("max_tokens %d not above the thinking budget %d", mt.Int(), b.Int())
		}
		for _, tool := range r.Get("tools").Array() {
			if tool.Get("name").Type != gjson.String || !tool.Get("input_schema").IsObject() {
				t.Fatalf("tool %s", tool.Raw)
			}
		}
	})
}

// refText is the text and reasoning an Anthropic stream carries, up to its
// end (message_stop or an error event), read as the translator must.
func refText(data []byte) (text, reasoning string) {
	rd := sse.NewReader(bytes.NewReader(data))
	defer rd.Release()
	var tb, rb strings.Builder
	for {
		ev, err := rd.Next()
		if err != nil {
			return tb.String(), rb.String()
		}
		e := gjson.ParseBytes(sse.Data(ev))
		switch e.Get("type").String() {
		case "content_block_start":
			if b := e.Get("content_block"); b.Get("type").String() == "text" {
				tb.WriteString(b.Get("text").String())
			}
		case "content_block_delta":
			switch d := e.Get("delta"); d.Get("type").String() {
			case "text_delta":
				tb.WriteString(d.Get("text").String())
			case "thinking_delta":
				rb.WriteString(d.Get("thinking").String())
			}
		case "message_stop", "error":
			return tb.String(), rb.String()
		}
	}
}

var finishReasons = map[string]bool{"stop": true, "length": true, "tool_calls": true, "content_filter": true}

// FuzzResponse gives any upstream bytes to Do as a 200 answer, streamed or
// not. Invariants: no panic; non-stream: a clean error, or a chat
// completion (JSON, the assistant's message, a known finish reason, usage
// the gateway reads); stream: a leading error event becomes a non-2xx
// OpenAI error body; otherwise the body is OpenAI SSE: every event one
// "data: " line of a JSON chunk, an error object or [DONE], nothing after
// [DONE] or an error; io.EOF only after one of those; the deltas' text and
// reasoning are the upstream's, in order; with include_usage the chunk
// before [DONE] carries usage.
//
// The seed corpus is in testdata/fuzz/FuzzResponse.
func FuzzResponse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, true, true)
			f.Add(b, true, false)
		}
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "message_tool.json")); err == nil {
		f.Add(b, false, false)
	}
	d := &config.Deployment{ID: "a1", Provider: "anthropic", Model: "claude", Protocol: config.ProtocolAnthropic, Implemented: true,
		APIBase: "http://anthropic.invalid", APIKey: "sk-ant-fuzz"}
	f.Fuzz(func(t *testing.T, data []byte, stream, includeUsage bool) {
		call := wire.Call{Op: wire.OpChat, Stream: stream,
			Body: []byte(`{"model":"claude","messages":[{"role":"user","content":"hi"}]}`)}
		if stream && includeUsage {
			call.Body = []byte(`{"model":"claude","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`)
		}
		client := &http.Client{Transport: providerstest.Upstream{Status: 200, Body: data}}
		resp, err := anthropic.New(client).Do(context.Background(), d, call)
		if err != nil {
			if resp != nil {
				t.Fatalf("both a response and an error: %v", err)
			}
			if stream {
				t.Fatalf("a stream failed before its body was read: %v", err)
			}
			return
		}
		defer resp.Body.Close()
		if !stream {
			checkCompletion(t, resp)
			return
		}
		if resp.StatusCode != 200 {
			chunkstest.LeadingError(t, resp)
			return
		}
		checkStream(t, resp.Body, data, includeUsage)
	})
}

func checkCompletion(t *testing.T, resp *http.Response) {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || !json.Valid(b) {
		t.Fatalf("completion: status %d, err %v, body %s", resp.StatusCode, err, b)
	}
	r := gjson.ParseBytes(b)
	m := r.Get("choices.0.message")
	if r.Get("object").String() != "chat.completion" || m.Get("role").String() != "assistant" ||
		!finishReasons[r.Get("choices.0.finish_reason").String()] {
		t.Fatalf("completion shape: %s", b)
	}
	if c := m.Get("content"); c.Type != gjson.String && !(c.Type == gjson.Null && m.Get("tool_calls").IsArray()) {
		t.Fatalf("content %s", c.Raw)
	}
	for _, tc := range m.Get("tool_calls").Array() {
		if tc.Get("function.arguments").Type != gjson.String || tc.Get("function.name").Type != gjson.String {
			t.Fatalf("tool call %s", tc.Raw)
		}
	}
	if _, ok := wire.UsageOf(b); !ok {
		t.Fatalf("usage not read from %s", b)
	}
}

func checkStream(t *testing.T, body io.Reader, upstream []byte, includeUsage bool) {
	t.Helper()
	events, _ := chunkstest.Read(t, body)
	text, reasoning := chunkstest.Deltas(events, "content"), chunkstest.Deltas(events, "reasoning_content")
	wantText, wantReasoning := refText(upstream)
	// Text is passed on as JSON strings: each invalid UTF-8 byte becomes
	// U+FFFD (wire.AppendString), as encoding/json writes it.
	wantText, wantReasoning = validUTF8(wantText), validUTF8(wantReasoning)
	if text != wantText || reasoning != wantReasoning {
		t.Fatalf("text %q reasoning %q, upstream %q / %q", text, reasoning, wantText, wantReasoning)
	}
	if n := len(events); includeUsage && n > 0 && events[n-1] == "[DONE]" {
		if n < 2 || gjson.Get(events[n-2], "choices.#").Int() != 0 {
			t.Fatalf("no usage chunk before [DONE]: %q", events)
		}
		if _, ok := wire.UsageOf([]byte(events[n-2])); !ok {
			t.Fatalf("usage chunk not read: %s", events[n-2])
		}
	}
}

// validUTF8 is s with each byte that is not part of a valid UTF-8 sequence
// replaced by U+FFFD.
func validUTF8(s string) string {
	var b strings.Builder
	for _, r := range s { // range yields U+FFFD for each invalid byte
		b.WriteRune(r)
	}
	return b.String()
}
