package anthropic_test

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/providers/chunks/chunkstest"
	"github.com/sluice-gw/sluice/shared/wire"
)

func TestTranslateRequest(t *testing.T) {
	in := `{"model":"claude-sonnet-4-20250514","messages":[
	  {"role":"system","content":"You are terse."},
	  {"role":"developer","content":[{"type":"text","text":"Answer in English.","cache_control":{"type":"ephemeral"}}]},
	  {"role":"user","content":[{"type":"text","text":"What is in this image, and the weather?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
	  {"role":"assistant","content":null,"tool_calls":[
	    {"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}},
	    {"id":"toolu_2","type":"function","function":{"name":"get_time","arguments":""}}]},
	  {"role":"tool","tool_call_id":"toolu_1","content":"18C"},
	  {"role":"tool","tool_call_id":"toolu_2","content":"noon"},
	  {"role":"assistant","content":"A cat. 18C at noon."},
	  {"role":"user","content":"Thanks\n\"bye\""}],
	 "tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}},
	          {"type":"function","function":{"name":"get_time"}}],
	 "tool_choice":"required","parallel_tool_calls":false,
	 "stop":"END","temperature":0.2,"top_p":0.9,"stream":true,"stream_options":{"include_usage":true},
	 "user":"u-1","n":1}`
	got, err := anthropic.TranslateRequest([]byte(in), 4096)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, `{"model":"claude-sonnet-4-20250514",
	 "system":[{"type":"text","text":"You are terse."},{"type":"text","text":"Answer in English.","cache_control":{"type":"ephemeral"}}],
	 "messages":[
	  {"role":"user","content":[{"type":"text","text":"What is in this image, and the weather?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
	  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"location":"Paris"}},{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"18C"},{"type":"tool_result","tool_use_id":"toolu_2","content":"noon"}]},
	  {"role":"assistant","content":[{"type":"text","text":"A cat. 18C at noon."}]},
	  {"role":"user","content":[{"type":"text","text":"Thanks\n\"bye\""}]}],
	 "max_tokens":4096,"temperature":0.2,"top_p":0.9,"stop_sequences":["END"],"stream":true,
	 "metadata":{"user_id":"u-1"},
	 "tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"location":{"type":"string"}}}},
	          {"name":"get_time","input_schema":{"type":"object","properties":{}}}],
	 "tool_choice":{"type":"any","disable_parallel_tool_use":true}}`)
}

func TestTranslateRequestOptions(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"max_tokens kept, named tool, stop list", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":50,"tool_choice":{"type":"function","function":{"name":"f"}},"tools":[{"type":"function","function":{"name":"f"}}],"stop":["a","b"]}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":50,"stop_sequences":["a","b"],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"tool","name":"f"}}`},
		{"max_completion_tokens wins", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":50,"max_completion_tokens":70}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":70}`},
		{"reasoning_effort becomes thinking", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1000,"reasoning_effort":"low"}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":5120,"thinking":{"type":"enabled","budget_tokens":1024}}`},
		{"http image passed as a url source", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}],"max_tokens":4096}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := anthropic.TranslateRequest([]byte(tc.in), 4096)
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, got, tc.want)
		})
	}
	for _, bad := range []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain;base64,aGk="}}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`,
		`{"model":"m","messages":[{"role":"function","content":"x"}]}`,
		`{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"sometimes"}`,
	} {
		_, err := anthropic.TranslateRequest([]byte(bad), 4096)
		var e *apierr.Error
		if !errors.As(err, &e) || e.Kind != apierr.InvalidRequest {
			t.Errorf("%s: err %v, want an invalid request", bad, err)
		}
	}
}

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
	f := newFake(t)
	f.set(200, "message_tool.json")
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
	f := newFake(t)
	f.set(200, "stream_text.sse")
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
	f := newFake(t)
	f.set(200, "stream_tool.sse")
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
	f := newFake(t)
	f.set(200, "stream_error_after_content.sse")
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
	for _, tc := range []struct {
		name   string
		status int
		body   string
		stream bool
		kind   apierr.Kind
		code   int // the client's status
	}{
		{"429", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, false, apierr.UpstreamRateLimited, 429},
		{"529 overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, false, apierr.UpstreamServer, 503},
		{"prompt too long", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`, false, apierr.ContextWindowExceeded, 400},
		{"401", 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, false, apierr.UpstreamAuth, 502},
		{"403", 403, `{"type":"error","error":{"type":"permission_error","message":"no access"}}`, true, apierr.UpstreamAuth, 502},
		{"500", 500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, true, apierr.UpstreamServer, 502},
		{"400", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: field required"}}`, false, apierr.UpstreamBadRequest, 400},
		{"overloaded as the first stream event", 200, "stream_error_first.sse", true, apierr.UpstreamServer, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.set(tc.status, tc.body)
			resp, err := do(t, f, tc.stream, false)
			if err == nil {
				resp.Body.Close()
				t.Fatal("no error")
			}
			var e *apierr.Error
			if !errors.As(err, &e) || e.Kind != tc.kind || e.HTTPStatus() != tc.code {
				t.Fatalf("err %#v, want kind %v status %d", err, tc.kind, tc.code)
			}
			if strings.Contains(e.Message, "sk-ant-test") {
				t.Fatalf("key in message %q", e.Message)
			}
		})
	}
}
