package responses

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
)

func TestToChat(t *testing.T) {
	for _, tt := range []struct {
		name, req string
		history   []Turn
		stream    bool
		want      map[string]string // gjson path -> raw JSON
	}{
		{name: "string input, instructions, params",
			req: `{"model":"m","input":"hi","instructions":"be brief","max_output_tokens":50,"temperature":0.2,"top_p":0.9,"user":"u1","store":false,"include":["reasoning.encrypted_content"]}`,
			want: map[string]string{"model": `"x"`, "messages": `[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]`,
				"max_tokens": `50`, "temperature": `0.2`, "top_p": `0.9`, "user": `"u1"`, "store": ``, "include": ``, "stream": ``}},
		{name: "items: developer, typed parts, image, easy message",
			req:  `{"input":[{"role":"developer","content":"sys"},{"type":"message","role":"user","content":[{"type":"input_text","text":"look "},{"type":"input_image","image_url":"https://x/a.png","detail":"low"}]},{"role":"assistant","content":[{"type":"output_text","text":"a cat"}]}]}`,
			want: map[string]string{"messages": `[{"role":"system","content":"sys"},{"role":"user","content":[{"text":"look ","type":"text"},{"image_url":{"detail":"low","url":"https://x/a.png"},"type":"image_url"}]},{"role":"assistant","content":"a cat"}]`}},
		{name: "function calls merge into the assistant message; outputs become tool messages; reasoning dropped",
			req:  `{"input":[{"role":"user","content":"w?"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"xyz"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"checking"}]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"g","arguments":"{\"a\":1}"},{"type":"function_call_output","call_id":"c1","output":"r1"},{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"r2"}]}]}`,
			want: map[string]string{"messages": `[{"role":"user","content":"w?"},{"role":"assistant","content":"checking","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":"{\"a\":1}"}}]},{"role":"tool","content":"r1","tool_call_id":"c1"},{"role":"tool","content":"r2","tool_call_id":"c2"}]`}},
		{name: "history first, then the input",
			req:     `{"input":"and now?","instructions":"new"}`,
			history: []Turn{{Input: []byte(`[{"type":"message","role":"user","content":[{"type":"input_text","text":"one"}]}]`), Output: []byte(`[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"two"}]}]`)}},
			want:    map[string]string{"messages": `[{"role":"system","content":"new"},{"role":"user","content":"one"},{"role":"assistant","content":"two"},{"role":"user","content":"and now?"}]`}},
		{name: "tools, tool_choice, json_schema, reasoning effort, stream with usage",
			req:    `{"input":"x","tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true}],"tool_choice":{"type":"function","name":"f"},"text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object"},"strict":true}},"reasoning":{"effort":"low"},"parallel_tool_calls":false}`,
			stream: true,
			want: map[string]string{"tools": `[{"function":{"description":"d","name":"f","parameters":{"type":"object"},"strict":true},"type":"function"}]`,
				"tool_choice": `{"function":{"name":"f"},"type":"function"}`, "response_format": `{"json_schema":{"name":"s","schema":{"type":"object"},"strict":true},"type":"json_schema"}`,
				"reasoning_effort": `"low"`, "parallel_tool_calls": `false`, "stream": `true`, "stream_options": `{"include_usage":true}`}},
		{name: "json_object and tool_choice required",
			req:  `{"input":"x","text":{"format":{"type":"json_object"}},"tool_choice":"required"}`,
			want: map[string]string{"response_format": `{"type":"json_object"}`, "tool_choice": `"required"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ToChat([]byte(tt.req), "x", tt.history, tt.stream, true, false)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(out) {
				t.Fatalf("invalid JSON %s", out)
			}
			for path, want := range tt.want {
				if got := gjson.GetBytes(out, path).Raw; got != want {
					t.Errorf("%s = %s, want %s", path, got, want)
				}
			}
		})
	}
}

func TestToChatRefuses(t *testing.T) {
	for _, tt := range []struct{ req, param string }{
		{`{"input":7}`, "input"},
		{`{"input":[{"type":"compaction_summary","id":"x"}]}`, "input"},
		{`{"input":[{"role":"tool","content":"x"}]}`, "input"},
		{`{"input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`, "input"},
		{`{"input":[{"role":"assistant","content":[{"type":"input_image","image_url":"https://x"}]}]}`, "input"},
		{`{"input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, "input"},
		{`{"input":"x","tool_choice":"web_search"}`, "tool_choice"},
		{`{"input":"x","tool_choice":{"type":"file_search"}}`, "tool_choice"},
	} {
		_, err := ToChat([]byte(tt.req), "m", nil, false, false, false)
		if e := apierr.From(err); err == nil || e.Kind != apierr.InvalidRequest || e.Param != tt.param {
			t.Errorf("%s: %v, want an invalid request naming %s", tt.req, err, tt.param)
		}
	}
	// With drop_params, what chat cannot carry is left out.
	out, err := ToChat([]byte(`{"input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_file","file_id":"f"}]},{"type":"compaction_summary","id":"ws"}],"tools":[{"type":"web_search"},{"type":"function","name":"f"}],"tool_choice":{"type":"file_search"}}`), "m", nil, false, false, true)
	if err != nil || gjson.GetBytes(out, "messages").Raw != `[{"role":"user","content":"a"}]` || gjson.GetBytes(out, "tools.#").Int() != 1 || gjson.GetBytes(out, "tool_choice").Exists() {
		t.Errorf("dropped: %s, %v", out, err)
	}
}

// TestToChatCodexTools: Codex's tools as a chat model sees them: a
// namespace flattened, a custom tool as a function of one string, hosted
// tools and their calls left out; its earlier calls of them as tool calls.
func TestToChatCodexTools(t *testing.T) {
	req := `{"input":[{"role":"user","content":"go"},{"type":"web_search_call","id":"ws_1","status":"completed"},` +
		`{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":"*** Begin Patch"},{"type":"custom_tool_call_output","call_id":"c1","output":"done"},` +
		`{"type":"function_call","call_id":"c2","namespace":"multi_agent_v1","name":"spawn","arguments":"{}"},{"type":"function_call_output","call_id":"c2","output":"ok"}],` +
		`"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"}},{"type":"namespace","name":"multi_agent_v1","tools":[{"type":"function","name":"spawn","description":"s"}]},` +
		`{"type":"custom","name":"apply_patch","description":"patch","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},{"type":"web_search","external_web_access":false}],` +
		`"tool_choice":{"type":"custom","name":"apply_patch"}}`
	out, err := ToChat([]byte(req), "m", nil, false, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(out, "tools.#.function.name").Raw; got != `["exec_command","multi_agent_v1__spawn","apply_patch"]` {
		t.Errorf("tools %s", got)
	}
	if got := gjson.GetBytes(out, "tools.2.function.parameters.required").Raw; got != `["content"]` || !strings.Contains(gjson.GetBytes(out, "tools.2.function.description").Str, "start: x") {
		t.Errorf("custom tool %s", gjson.GetBytes(out, "tools.2").Raw)
	}
	msgs := gjson.GetBytes(out, "messages")
	if len(msgs.Array()) != 5 || msgs.Get("1.tool_calls.0.function.arguments").Str != `{"content":"*** Begin Patch"}` ||
		msgs.Get("3.tool_calls.0.function.name").Str != "multi_agent_v1__spawn" || msgs.Get("2.role").Str != "tool" {
		t.Errorf("messages %s", msgs.Raw)
	}
	if got := gjson.GetBytes(out, "tool_choice").Raw; got != `{"function":{"name":"apply_patch"},"type":"function"}` {
		t.Errorf("tool_choice %s", got)
	}
	// Back: calls of the namespaced and the custom tool.
	chat := `{"choices":[{"message":{"tool_calls":[{"id":"k1","type":"function","function":{"name":"multi_agent_v1__spawn","arguments":"{}"}},{"id":"k2","type":"function","function":{"name":"apply_patch","arguments":"{\"content\":\"*** End Patch\"}"}}]},"finish_reason":"tool_calls"}]}`
	obj, _ := FromChat([]byte(chat), Meta{ID: "r", Request: []byte(req)})
	o := gjson.ParseBytes(obj)
	if o.Get("output.0.type").Str != "function_call" || o.Get("output.0.name").Str != "spawn" || o.Get("output.0.namespace").Str != "multi_agent_v1" ||
		o.Get("output.1.type").Str != "custom_tool_call" || o.Get("output.1.input").Str != "*** End Patch" || !strings.HasPrefix(o.Get("output.1.id").Str, "ctc_") {
		t.Errorf("output %s", o.Get("output").Raw)
	}
	// Streamed: the custom call's input comes whole.
	s := NewStream(Meta{ID: "r", Request: []byte(req)})
	ev := string(s.Event([]byte(`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"k2","function":{"name":"apply_patch","arguments":"{\"content\":"}}]}}]}`)))
	ev += string(s.Event([]byte(`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]},"finish_reason":"tool_calls"}]}`)))
	end, _, _ := s.End()
	ev += string(end)
	if strings.Contains(ev, "function_call_arguments") || !strings.Contains(ev, `"type":"response.custom_tool_call_input.done","sequence_number":3,"item_id":"ctc_`) || !strings.Contains(ev, `"input":"x"`) {
		t.Errorf("stream %s", ev)
	}
}

func TestFromChat(t *testing.T) {
	chat := `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"hmm","content":"Hi","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":2}}}`
	obj, output := FromChat([]byte(chat), Meta{ID: "resp_1", Model: "m", Created: 5, Request: []byte(`{"instructions":"be","store":false,"tools":[{"type":"function","name":"f"}]}`)})
	if !json.Valid(obj) || !json.Valid(output) {
		t.Fatalf("invalid JSON: %s", obj)
	}
	o := gjson.ParseBytes(obj)
	for path, want := range map[string]string{
		"id": `"resp_1"`, "object": `"response"`, "status": `"completed"`, "model": `"m"`, "created_at": `5`,
		"output.#.type": `["reasoning","message","function_call"]`, "output.0.summary.0.text": `"hmm"`,
		"output.1.content.0.text": `"Hi"`, "output.2.call_id": `"call_1"`, "output.2.name": `"f"`,
		"usage":        `{"input_tokens":10,"input_tokens_details":{"cached_tokens":3},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":15}`,
		"instructions": `"be"`, "store": `false`, "temperature": `1.0`, "previous_response_id": `null`, "tools.0.name": `"f"`,
	} {
		if got := o.Get(path).Raw; got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	// Anthropic's cache writes, priced by the gateway, ride in the usage.
	obj, _ = FromChat([]byte(`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":10},"cache_creation_input_tokens":30}}`), Meta{ID: "r"})
	if got := gjson.GetBytes(obj, "usage.input_tokens_details").Raw; got != `{"cached_tokens":10,"cache_creation_tokens":30}` {
		t.Errorf("usage details %s", got)
	}
	obj, _ = FromChat([]byte(`{"choices":[{"message":{"content":"cut"},"finish_reason":"length"}]}`), Meta{ID: "r"})
	if s, r := gjson.GetBytes(obj, "status").Str, gjson.GetBytes(obj, "incomplete_details.reason").Str; s != "incomplete" || r != "max_output_tokens" {
		t.Errorf("cut output: status %q reason %q", s, r)
	}
}

func TestIDs(t *testing.T) {
	id := EncodeID("openai", "dep-1", "resp_abc")
	// LiteLLM's own encoding of the same id.
	if id != "resp_bGl0ZWxsbTpjdXN0b21fbGxtX3Byb3ZpZGVyOm9wZW5haTttb2RlbF9pZDpkZXAtMTtyZXNwb25zZV9pZDpyZXNwX2FiYw==" {
		t.Errorf("EncodeID = %s", id)
	}
	for _, s := range []string{id, id[:len(id)-2]} { // padding stripped in transit
		if d, ok := DecodeID(s); !ok || d != (DecodedID{"openai", "dep-1", "resp_abc"}) {
			t.Errorf("DecodeID(%s) = %+v, %v", s, d, ok)
		}
	}
	for _, s := range []string{"resp_abc", "msg_x", "resp_!!!", "resp_" + "bGl0ZWxsbTp4"} {
		if _, ok := DecodeID(s); ok {
			t.Errorf("DecodeID(%s) decoded", s)
		}
	}
}

func TestExpand(t *testing.T) {
	history := []Turn{{
		Input:  []byte(`[{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"a"}]}]`),
		Output: []byte(`[{"id":"rs_1","type":"reasoning","summary":[]},{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"output_text","text":"b"}]}]`),
	}}
	out, err := Expand([]byte(`{"model":"m","previous_response_id":"resp_x","input":"c","store":false}`), history)
	if err != nil {
		t.Fatal(err)
	}
	r := gjson.ParseBytes(out)
	if r.Get("previous_response_id").Exists() || r.Get("model").Str != "m" || !r.Get("store").Exists() ||
		r.Get("input.#").Int() != 3 || r.Get("input.#(id)#").Raw != "[]" || r.Get("input.1.content.0.text").Str != "b" || r.Get("input.2.content.0.text").Str != "c" {
		t.Errorf("expanded %s", out)
	}
}
