package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/providers/chunks/chunkstest"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
	"github.com/sluice-gw/sluice/shared/wire"
)

func TestTranslateResponse(t *testing.T) {
	raw, err := os.ReadFile("testdata/message_tool.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := anthropic.TranslateResponse(raw, 7)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, `{"id":"msg_01Aq9w938a90dw8q","object":"chat.completion","created":7,"model":"claude-sonnet-4-20250514",
	 "choices":[{"index":0,"message":{"role":"assistant","content":"I'll check the weather.","reasoning_content":"Need weather.",
	   "tool_calls":[{"index":0,"id":"toolu_01A09q90qw90lq917835lq9","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"San Francisco, CA\",\"unit\":\"celsius\"}"}}],
	   "thinking_blocks":[{"type":"thinking","thinking":"Need weather.","signature":"zbbJhbGciOiJFU8zI1NiIsImtakcjsu38219c0"}]},
	   "finish_reason":"tool_calls"}],
	 "usage":{"prompt_tokens":3119,"completion_tokens":503,"total_tokens":3622,"prompt_tokens_details":{"cached_tokens":1024},"cache_read_input_tokens":1024,"cache_creation_input_tokens":0}}`)
	u, ok := wire.UsageOf(got)
	if !ok || u.PromptTokens != 3119 || u.CachedTokens != 1024 || u.CompletionTokens != 503 {
		t.Fatalf("usage as the gateway reads it: %+v", u)
	}
	for stop, want := range map[string]string{"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
		"model_context_window_exceeded": "length", "tool_use": "tool_calls", "refusal": "content_filter"} {
		if got := anthropic.FinishReason(stop); got != want {
			t.Errorf("FinishReason(%s) = %s, want %s", stop, got, want)
		}
	}
}

func TestDoNonStream(t *testing.T) {
	f := newFake(t, 200, "message_tool.json")
	resp, err := do(t, f, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Content-Type") != "application/json" || int64(len(b)) != resp.ContentLength {
		t.Fatalf("headers %v, length %d of %d", resp.Header, resp.ContentLength, len(b))
	}
	if gjson.GetBytes(b, "choices.0.message.tool_calls.0.function.name").String() != "get_weather" {
		t.Fatalf("body %s", b)
	}
	if sent := f.bodies[0]; gjson.Get(sent, "max_tokens").Int() != 4096 || gjson.Get(sent, "stream").Exists() {
		t.Fatalf("sent %s", sent)
	}
}

func TestDoStreamText(t *testing.T) {
	f := newFake(t, 200, "stream_text.sse")
	evs := chunkstest.Streamed(t)(do(t, f, true, true))
	var text strings.Builder
	for _, ev := range evs[:len(evs)-2] {
		text.WriteString(gjson.Get(ev, "choices.0.delta.content").String())
		if gjson.Get(ev, "object").String() != "chat.completion.chunk" || gjson.Get(ev, "id").String() != "msg_01XFDUDYJgAACzvnptvVoYEL" {
			t.Fatalf("chunk %s", ev)
		}
	}
	if text.String() != "Hello there!\n\"quoted\"" {
		t.Fatalf("text %q", text.String())
	}
	if gjson.Get(evs[0], "choices.0.delta.role").String() != "assistant" {
		t.Fatalf("first chunk %s", evs[0])
	}
	if fr := gjson.Get(evs[len(evs)-3], "choices.0.finish_reason").String(); fr != "stop" {
		t.Fatalf("finish chunk %s", evs[len(evs)-3])
	}
	usage := evs[len(evs)-2]
	u, ok := wire.UsageOf([]byte(usage))
	if !ok || gjson.Get(usage, "choices.#").Int() != 0 || u != (wire.Usage{PromptTokens: 135, CompletionTokens: 15, TotalTokens: 150, CachedTokens: 100, CacheCreationTokens: 10}) {
		t.Fatalf("usage chunk %s: %+v", usage, u)
	}
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("last event %s", evs[len(evs)-1])
	}
}

func TestDoStreamToolAndReasoning(t *testing.T) {
	f := newFake(t, 200, "stream_tool.sse")
	evs := chunkstest.Streamed(t)(do(t, f, true, false))
	var reasoning, content, args strings.Builder
	var id, name, finish string
	for _, ev := range evs {
		if strings.Contains(ev, `"usage"`) {
			t.Fatalf("usage chunk without include_usage: %s", ev)
		}
		d := gjson.Get(ev, "choices.0.delta")
		reasoning.WriteString(d.Get("reasoning_content").String())
		content.WriteString(d.Get("content").String())
		if tc := d.Get("tool_calls.0"); tc.Exists() {
			if tc.Get("index").Int() != 0 {
				t.Fatalf("tool index %s", ev)
			}
			if v := tc.Get("id").String(); v != "" {
				id, name = v, tc.Get("function.name").String()
			}
			args.WriteString(tc.Get("function.arguments").String())
		}
		if v := gjson.Get(ev, "choices.0.finish_reason").String(); v != "" {
			finish = v
		}
	}
	if reasoning.String() != "The user wants the weather." || content.String() != "Okay, let me check." {
		t.Fatalf("reasoning %q content %q", reasoning.String(), content.String())
	}
	if id != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" || name != "get_weather" || args.String() != `{"location": "San Francisco, CA"}` || finish != "tool_calls" {
		t.Fatalf("tool call %s %s %s, finish %s", id, name, args.String(), finish)
	}
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("last event %s", evs[len(evs)-1])
	}
}

// An error event after content ends the stream with an OpenAI error event
// (the gateway forwards it and ends the stream); no [DONE].
func TestDoStreamErrorAfterContent(t *testing.T) {
	f := newFake(t, 200, "stream_error_after_content.sse")
	evs := chunkstest.Streamed(t)(do(t, f, true, true))
	if len(evs) != 3 || gjson.Get(evs[1], "choices.0.delta.content").String() != "Hello" {
		t.Fatalf("events %q", evs)
	}
	last := evs[2]
	if gjson.Get(last, "error.type").String() != "overloaded_error" || gjson.Get(last, "error.message").String() != "Overloaded" {
		t.Fatalf("last event %s", last)
	}
}

// A stream cut without message_stop is an unexpected EOF, not a clean end.
func TestStreamCut(t *testing.T) {
	data, _ := os.ReadFile("testdata/stream_text.sse")
	cut := data[:strings.Index(string(data), "event: message_delta")]
	s := anthropic.NewStream(io.NopCloser(strings.NewReader(string(cut))), true, 1)
	_, err := io.ReadAll(s)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want unexpected EOF", err)
	}
}

func TestErrors(t *testing.T) {
	providerstest.Errors(t, []providerstest.ErrorCase{
		{Name: "429", Status: 429, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, Kind: apierr.UpstreamRateLimited, Code: 429},
		{Name: "529 overloaded", Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Kind: apierr.UpstreamServer, Code: 503},
		{Name: "prompt too long", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`, Kind: apierr.ContextWindowExceeded, Code: 400},
		{Name: "401", Status: 401, Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, Kind: apierr.UpstreamAuth, Code: 502},
		{Name: "403", Status: 403, Body: `{"type":"error","error":{"type":"permission_error","message":"no access"}}`, Stream: true, Kind: apierr.UpstreamAuth, Code: 502},
		{Name: "500", Status: 500, Body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, Stream: true, Kind: apierr.UpstreamServer, Code: 502},
		{Name: "400", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages: field required"}}`, Kind: apierr.UpstreamBadRequest, Code: 400},
		{Name: "overloaded as the first stream event", Status: 200, Body: "stream_error_first.sse", Stream: true, Kind: apierr.UpstreamServer, Code: 503},
	}, func(t *testing.T, c providerstest.ErrorCase) (*http.Response, error) {
		return do(t, newFake(t, c.Status, c.Body), c.Stream, false)
	}, "sk-ant-test")
}

func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// fake is a fake Anthropic API: it checks the headers, records the
// translated requests and answers with its status and a body (a recorded
// event stream for streams).
type fake struct {
	mu     sync.Mutex
	bodies []string
	status int    // the status to answer with
	file   string // the testdata file to answer with; the error body when status is not 200
	srv    *httptest.Server
}

// newFake starts a fake answering every request with status and file.
func newFake(t *testing.T, status int, file string) *fake {
	f := &fake{status: status, file: file}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(b))
		f.mu.Unlock()
		status, file := f.status, f.file
		if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "sk-ant-test" || r.Header.Get("anthropic-version") != "2023-06-01" {
			w.WriteHeader(http.StatusTeapot)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad path or headers: %s"}}`, r.URL.Path)
			return
		}
		if status != 200 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, file)
			return
		}
		data, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Error(err)
			return
		}
		if strings.HasSuffix(file, ".sse") {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range strings.SplitAfter(string(data), "\n\n") { // one write per event
				io.WriteString(w, ev)
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(data)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) deployment() *config.Deployment {
	return &config.Deployment{ID: "claude-1", Provider: "anthropic", Model: "claude-sonnet-4-20250514",
		Protocol: config.ProtocolAnthropic, Implemented: true, APIBase: f.srv.URL, APIKey: "sk-ant-test"}
}

func do(t *testing.T, f *fake, stream, includeUsage bool) (*http.Response, error) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"claude-sonnet-4-20250514","messages":[{"role":"user","content":"hi"}],"stream":%v,"stream_options":{"include_usage":%v}}`, stream, includeUsage)
	return doBody(t, f.deployment(), body)
}

// doBody sends body through the provider to the fake upstream deployment d.
func doBody(t *testing.T, d *config.Deployment, body string) (*http.Response, error) {
	t.Helper()
	stream := gjson.Get(body, "stream").Bool()
	return providers.New(http.DefaultClient).Do(context.Background(), d, wire.Call{Op: wire.OpChat, Body: []byte(body), Stream: stream})
}
