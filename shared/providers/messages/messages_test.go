package messages

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestToChat(t *testing.T) {
	body := `{"model":"gpt-4o","max_tokens":50,"temperature":0.2,"top_k":5,"stop_sequences":["END"],"stream":true,
"metadata":{"user_id":"u-7"},"thinking":{"type":"enabled","budget_tokens":1024},
"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}},{"type":"text","text":"and kind"}],
"tools":[{"name":"get_weather","description":"weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],
"tool_choice":{"type":"any","disable_parallel_tool_use":true},
"messages":[
 {"role":"user","content":"hello"},
 {"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"let me check"},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"}]},{"type":"text","text":"and"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}
]}`
	out, err := ToChat([]byte(body), false)
	if err != nil {
		t.Fatal(err)
	}
	c := gjson.ParseBytes(out)
	checks := map[string]string{
		"model":                        "gpt-4o",
		"max_tokens":                   "50",
		"temperature":                  "0.2",
		"stop":                         `["END"]`,
		"stream_options.include_usage": "true",
		"user":                         "u-7",
		"tool_choice":                  "required",
		"parallel_tool_calls":          "false",
		"tools.0.type":                 "function",
		"tools.0.function.name":        "get_weather",
		"tools.0.function.parameters.properties.city.type": "string",
		"messages.#":                                 "5",
		"messages.0.role":                            "system",
		"messages.0.content":                         "be brief\nand kind",
		"messages.1.content":                         "hello",
		"messages.2.role":                            "assistant",
		"messages.2.content":                         "let me check",
		"messages.2.tool_calls.0.id":                 "toolu_1",
		"messages.2.tool_calls.0.function.arguments": `{"city":"Paris"}`,
		"messages.3.role":                            "tool",
		"messages.3.tool_call_id":                    "toolu_1",
		"messages.3.content":                         "sunny",
		"messages.4.role":                            "user",
		"messages.4.content.0.text":                  "and",
		"messages.4.content.1.image_url.url":         "data:image/png;base64,AAAA",
	}
	for path, want := range checks {
		if got := c.Get(path).String(); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	for _, gone := range []string{"top_k", "thinking", "stop_sequences", "metadata", "system"} {
		if c.Get(gone).Exists() {
			t.Errorf("%s was sent to a chat API", gone)
		}
	}
}

// The top-level system comes first whatever the body's key order (the Go
// SDK writes it after messages).
func TestToChatSystemAfterMessages(t *testing.T) {
	out, err := ToChat([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"system":"be brief"}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(out, "messages.#.role").Raw; got != `["system","user"]` {
		t.Errorf("roles %s: %s", got, out)
	}
}

// A system message in the middle of a conversation (Claude Code's
// reminders) stays where it is, as a chat system message, its text blocks
// joined; the top-level system comes first.
func TestToChatMidConversationSystem(t *testing.T) {
	body := `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"top"}],"messages":[
 {"role":"user","content":"hi"},
 {"role":"system","content":[{"type":"text","text":"<system-reminder>a</system-reminder>","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b"}]},
 {"role":"assistant","content":"hello"},
 {"role":"user","content":"go on"},
 {"role":"system","content":"be terse"}
]}`
	out, err := ToChat([]byte(body), false)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	gjson.GetBytes(out, "messages").ForEach(func(_, m gjson.Result) bool { roles = append(roles, m.Get("role").Str); return true })
	if got := strings.Join(roles, ","); got != "system,user,system,assistant,user,system" {
		t.Fatalf("roles %s", got)
	}
	for path, want := range map[string]string{"messages.0.content": "top", "messages.2.content": "<system-reminder>a</system-reminder>\nb", "messages.5.content": "be terse"} {
		if got := gjson.GetBytes(out, path).String(); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
}

func TestToChatRefuses(t *testing.T) {
	for name, body := range map[string]string{
		"server tool": `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`,
		"document":    `{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"AA"}}]}]}`,
		"role":        `{"model":"m","messages":[{"role":"tool","content":"hi"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ToChat([]byte(body), false); err == nil || !strings.Contains(err.Error(), "invalid_request") {
				t.Errorf("err = %v, want an invalid request", err)
			}
			if name != "role" {
				if _, err := ToChat([]byte(body), true); err != nil {
					t.Errorf("with drop_params: %v", err)
				}
			}
		})
	}
}

func TestMessage(t *testing.T) {
	chat := `{"id":"chatcmpl-9","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"ok","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"call_2","type":"function","function":{"name":"g","arguments":"not json"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107,"prompt_tokens_details":{"cached_tokens":60}}}`
	m := gjson.ParseBytes(Message([]byte(chat), "alias"))
	checks := map[string]string{
		"id": "msg_chatcmpl-9", "type": "message", "role": "assistant", "model": "alias",
		"content.0.type": "text", "content.0.text": "ok",
		"content.1.type": "tool_use", "content.1.id": "call_1", "content.1.input.a": "1",
		"content.2.input": "{}", "stop_reason": "tool_use", "stop_sequence": "",
		"usage.input_tokens": "40", "usage.cache_read_input_tokens": "60", "usage.output_tokens": "7",
	}
	for path, want := range checks {
		if got := m.Get(path).String(); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
}

func sseResponse(body string) *http.Response {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
}

// A chat stream becomes Anthropic's event sequence: text, then a tool call
// in fragments, the stop reason and the usage at the end.
func TestStream(t *testing.T) {
	chat := `data: {"id":"c1","model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

data: {"id":"c1","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hi "},"finish_reason":null}]}

data: {"id":"c1","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"there"},"finish_reason":null}]}

data: {"id":"c1","model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}

data: {"id":"c1","model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]},"finish_reason":null}]}

data: {"id":"c1","model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":null}]}

data: {"id":"c1","model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"id":"c1","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14}}

data: [DONE]

`
	resp, err := FromChat(sseResponse(chat), true, "alias")
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var data []gjson.Result
	for _, ev := range strings.Split(strings.TrimSpace(string(out)), "\n\n") {
		lines := strings.SplitN(ev, "\n", 2)
		name := strings.TrimPrefix(lines[0], "event: ")
		d := gjson.Parse(strings.TrimPrefix(lines[1], "data: "))
		if d.Get("type").Str != name {
			t.Errorf("event %s carries type %s", name, d.Get("type").Str)
		}
		names = append(names, name)
		data = append(data, d)
	}
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(names, " ") != want {
		t.Fatalf("events:\n%s\nwant\n%s", strings.Join(names, " "), want)
	}
	checks := []struct {
		i          int
		path, want string
	}{
		{0, "message.model", "alias"},
		{0, "message.id", "msg_c1"},
		{3, "delta.text", "Hi "},
		{3, "index", "0"},
		{6, "content_block.type", "tool_use"},
		{6, "content_block.id", "call_1"},
		{6, "index", "1"},
		{7, "delta.type", "input_json_delta"},
		{7, "delta.partial_json", `{"a":`},
		{10, "delta.stop_reason", "tool_use"},
		{10, "usage.input_tokens", "10"},
		{10, "usage.output_tokens", "4"},
	}
	for _, c := range checks {
		if got := data[c.i].Get(c.path).String(); got != c.want {
			t.Errorf("event %d (%s) %s = %q, want %q", c.i, names[c.i], c.path, got, c.want)
		}
	}
}

// A chat stream that ends before its answer did is an error, not a clean
// end; an error chunk becomes an Anthropic error event.
func TestStreamFailures(t *testing.T) {
	cut := `data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}` + "\n\n"
	resp, _ := FromChat(sseResponse(cut), true, "m")
	if _, err := io.ReadAll(resp.Body); err != io.ErrUnexpectedEOF {
		t.Errorf("cut stream: err %v, want io.ErrUnexpectedEOF", err)
	}
	withError := cut + `data: {"error":{"message":"boom","type":"server_error"}}` + "\n\n"
	resp, _ = FromChat(sseResponse(withError), true, "m")
	out, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(out), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"boom\"}}") {
		t.Errorf("error chunk: %s", out)
	}
}

func TestEstimateCount(t *testing.T) {
	resp := EstimateCount([]byte(`{"model":"m","messages":[{"role":"user","content":"hello there"}]}`))
	out, _ := io.ReadAll(resp.Body)
	if gjson.GetBytes(out, "input_tokens").Int() <= 0 || resp.Header.Get(EstimateHeader) != "estimate" {
		t.Errorf("estimate %s, header %q", out, resp.Header.Get(EstimateHeader))
	}
}
