package anthropic_test

import (
	"errors"
	"io"
	"runtime/debug"
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
		{"a system message mid-conversation joins the top-level system (as LiteLLM's), the user turns around it merged", `{"model":"m","messages":[{"role":"system","content":"top"},{"role":"user","content":"hi"},{"role":"system","content":"mid"},{"role":"user","content":"again"}]}`,
			`{"model":"m","system":[{"type":"text","text":"top"},{"type":"text","text":"mid"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"again"}]}],"max_tokens":4096}`},
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

const schemaFormat = `"response_format":{"type":"json_schema","json_schema":{"name":"weather","schema":{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number"}},"required":["city"]}}}`

// response_format json_schema becomes a forced json_tool_call tool (as in
// LiteLLM), and the tool's input comes back as the message content.
func TestResponseFormatJSONSchema(t *testing.T) {
	f := newFake(t, 200, "message_json.json")
	b := chunkstest.Body(t)(doBody(t, f.deployment(), `{"model":"claude-sonnet-4-20250514","messages":[{"role":"user","content":"weather?"}],`+schemaFormat+`}`))
	sent := f.bodies[0]
	jsonEqual(t, []byte(gjson.Get(sent, "tools").Raw), `[{"name":"json_tool_call","input_schema":{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number"}},"required":["city"]}}]`)
	jsonEqual(t, []byte(gjson.Get(sent, "tool_choice").Raw), `{"type":"tool","name":"json_tool_call"}`)
	if gjson.Get(sent, "response_format").Exists() {
		t.Fatalf("response_format forwarded: %s", sent)
	}
	m := gjson.GetBytes(b, "choices.0.message")
	jsonEqual(t, []byte(m.Get("content").String()), `{"city":"Paris","temp_c":18}`)
	if m.Get("tool_calls").Exists() || gjson.GetBytes(b, "choices.0.finish_reason").String() != "stop" {
		t.Fatalf("body %s", b)
	}
}

func TestResponseFormatJSONSchemaStream(t *testing.T) {
	f := newFake(t, 200, "stream_json.sse")
	evs := chunkstest.Streamed(t)(doBody(t, f.deployment(), `{"model":"claude-sonnet-4-20250514","messages":[{"role":"user","content":"weather?"}],"stream":true,`+schemaFormat+`}`))
	var content strings.Builder
	var finish string
	for _, ev := range evs {
		d := gjson.Get(ev, "choices.0.delta")
		if d.Get("tool_calls").Exists() {
			t.Fatalf("tool call chunk in JSON mode: %s", ev)
		}
		content.WriteString(d.Get("content").String())
		if v := gjson.Get(ev, "choices.0.finish_reason").String(); v != "" {
			finish = v
		}
	}
	if content.String() != `{"city": "Paris", "temp_c": 18}` || finish != "stop" {
		t.Fatalf("content %q finish %q\n%q", content.String(), finish, evs)
	}
	if gjson.Get(f.bodies[0], "tool_choice.name").String() != "json_tool_call" {
		t.Fatalf("sent %s", f.bodies[0])
	}
}

func TestResponseFormatRequest(t *testing.T) {
	const head = `{"model":"m","messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct{ name, in, tools, choice string }{
		{"json_object: a permissive schema", head + `,"response_format":{"type":"json_object"}}`,
			`[{"name":"json_tool_call","input_schema":{"type":"object","additionalProperties":true,"properties":{}}}]`,
			`{"type":"tool","name":"json_tool_call"}`},
		{"schema without type gets type object", head + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"properties":{"a":{"type":"string"}}}}}}`,
			`[{"name":"json_tool_call","input_schema":{"type":"object","properties":{"a":{"type":"string"}}}}]`,
			`{"type":"tool","name":"json_tool_call"}`},
		{"own tools kept, json_tool_call added and forced", head + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto",` + schemaFormat + `}`,
			`[{"name":"f","input_schema":{"type":"object","properties":{}}},{"name":"json_tool_call","input_schema":{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number"}},"required":["city"]}}]`,
			`{"type":"tool","name":"json_tool_call"}`},
		{"thinking on: the tool is not forced (Anthropic refuses forced tools with thinking)", head + `,"reasoning_effort":"low","response_format":{"type":"json_object"}}`,
			`[{"name":"json_tool_call","input_schema":{"type":"object","additionalProperties":true,"properties":{}}}]`, ``},
		{"text: nothing to do", head + `,"response_format":{"type":"text"}}`, ``, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := anthropic.TranslateRequest([]byte(tc.in), 4096)
			if err != nil {
				t.Fatal(err)
			}
			if tools := gjson.GetBytes(got, "tools"); tc.tools == "" {
				if tools.Exists() {
					t.Fatalf("tools %s", tools.Raw)
				}
			} else {
				jsonEqual(t, []byte(tools.Raw), tc.tools)
			}
			if choice := gjson.GetBytes(got, "tool_choice"); tc.choice == "" {
				if choice.Exists() {
					t.Fatalf("tool_choice %s", choice.Raw)
				}
			} else {
				jsonEqual(t, []byte(choice.Raw), tc.choice)
			}
		})
	}
	for _, bad := range []string{
		head + `,"response_format":{"type":"xml"}}`,
		head + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":"nope"}}}`,
	} {
		_, err := anthropic.TranslateRequest([]byte(bad), 4096)
		var e *apierr.Error
		if !errors.As(err, &e) || e.Kind != apierr.InvalidRequest || !strings.Contains(e.Message, "response_format") {
			t.Errorf("%s: err %v, want a 400 naming response_format", bad, err)
		}
	}
}

// OpenAI params Anthropic has no counterpart for are refused with a 400
// naming them (LiteLLM's UnsupportedParamsError), unless drop_params is set
// in the request or on the deployment (litellm_settings.drop_params).
func TestUnsupportedParams(t *testing.T) {
	const head = `{"model":"m","messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct{ param, in string }{
		{"n", `"n":2`},
		{"logprobs", `"logprobs":true`},
		{"top_logprobs", `"top_logprobs":3`},
		{"presence_penalty", `"presence_penalty":0.5`},
		{"frequency_penalty", `"frequency_penalty":0`},
		{"seed", `"seed":42`},
		{"logit_bias", `"logit_bias":{"50256":-100}`},
		{"functions", `"functions":[{"name":"f"}]`},
	} {
		_, err := anthropic.TranslateRequest([]byte(head+`,`+tc.in+`}`), 4096)
		var e *apierr.Error
		if !errors.As(err, &e) || e.Kind != apierr.InvalidRequest || e.Param != tc.param || !strings.Contains(e.Message, tc.param) || !strings.Contains(e.Message, "drop_params") {
			t.Errorf("%s: err %#v, want a 400 naming %s", tc.in, err, tc.param)
		}
		out, err := anthropic.TranslateRequest([]byte(head+`,`+tc.in+`,"drop_params":true}`), 4096)
		if err != nil {
			t.Errorf("%s with drop_params: %v", tc.in, err)
		}
		if gjson.GetBytes(out, tc.param).Exists() || gjson.GetBytes(out, "drop_params").Exists() {
			t.Errorf("%s with drop_params: sent %s", tc.in, out)
		}
	}
	for _, ok := range []string{`"n":1`, `"n":null`, `"seed":null`, `"logprobs":false`, `"stream_options":{"include_usage":true}`, `"top_k":5`} {
		if _, err := anthropic.TranslateRequest([]byte(head+`,`+ok+`}`), 4096); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}

	f := newFake(t, 200, "message_tool.json")
	body := `{"model":"claude-sonnet-4-20250514","messages":[{"role":"user","content":"hi"}],"seed":7,"presence_penalty":1}`
	_, err := doBody(t, f.deployment(), body)
	var e *apierr.Error
	if !errors.As(err, &e) || e.HTTPStatus() != 400 || e.Param != "seed" || !strings.Contains(e.Message, "presence_penalty") {
		t.Fatalf("err %#v, want a 400 naming seed and presence_penalty", err)
	}
	if len(f.bodies) != 0 {
		t.Fatalf("sent upstream: %q", f.bodies)
	}
	d := f.deployment()
	d.DropParams = true // litellm_settings.drop_params: true
	resp, err := doBody(t, d, body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if sent := f.bodies[0]; gjson.Get(sent, "seed").Exists() || gjson.Get(sent, "presence_penalty").Exists() {
		t.Fatalf("sent %s", sent)
	}
}

// The signed thinking blocks come back as thinking_blocks beside
// reasoning_content (as in LiteLLM), so that a tool loop with thinking on can
// send them back.
func TestThinkingBlocksResponse(t *testing.T) {
	f := newFake(t, 200, "message_thinking.json")
	b := chunkstest.Body(t)(doBody(t, f.deployment(), `{"model":"claude-sonnet-4-20250514","messages":[{"role":"user","content":"weather?"}],"reasoning_effort":"low"}`))
	m := gjson.GetBytes(b, "choices.0.message")
	jsonEqual(t, []byte(m.Get("thinking_blocks").Raw), `[{"type":"thinking","thinking":"Need the weather.","signature":"EqQBCgIYAhIMsig1"},
	  {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"}]`)
	if m.Get("reasoning_content").String() != "Need the weather." || m.Get("tool_calls.0.function.name").String() != "get_weather" {
		t.Fatalf("message %s", m.Raw)
	}
}

func TestThinkingBlocksStream(t *testing.T) {
	f := newFake(t, 200, "stream_tool.sse")
	evs := chunkstest.Streamed(t)(do(t, f, true, false))
	var thinking, signature strings.Builder
	for _, ev := range evs {
		for _, tb := range gjson.Get(ev, "choices.0.delta.thinking_blocks").Array() {
			if tb.Get("type").String() != "thinking" {
				t.Fatalf("block %s", tb.Raw)
			}
			thinking.WriteString(tb.Get("thinking").String())
			signature.WriteString(tb.Get("signature").String())
		}
	}
	if thinking.String() != "The user wants the weather." || signature.String() != "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" {
		t.Fatalf("thinking %q signature %q", thinking.String(), signature.String())
	}

	const redacted = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgB\"}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	out, err := io.ReadAll(anthropic.NewStream(io.NopCloser(strings.NewReader(redacted)), false, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"thinking_blocks":[{"type":"redacted_thinking","data":"EmwKAhgB"}]`) {
		t.Fatalf("stream %s", out)
	}
}

// An assistant message's thinking_blocks go back first in its content, as
// thinking (with signature) and redacted_thinking blocks.
func TestThinkingBlocksRequest(t *testing.T) {
	in := `{"model":"m","reasoning_effort":"low","messages":[{"role":"user","content":"weather?"},
	  {"role":"assistant","content":"Checking.","thinking_blocks":[{"type":"thinking","thinking":"Need weather.","signature":"sig1"},{"type":"redacted_thinking","data":"d1"}],
	   "tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
	  {"role":"tool","tool_call_id":"toolu_1","content":"18C"}],
	 "tools":[{"type":"function","function":{"name":"get_weather"}}]}`
	got, err := anthropic.TranslateRequest([]byte(in), 4096)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, []byte(gjson.GetBytes(got, "messages.1").Raw), `{"role":"assistant","content":[
	  {"type":"thinking","thinking":"Need weather.","signature":"sig1"},{"type":"redacted_thinking","data":"d1"},
	  {"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]}`)
	for _, bad := range []string{
		`{"model":"m","messages":[{"role":"assistant","content":"x","thinking_blocks":[{"type":"text","text":"no"}]}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":"x","thinking_blocks":[{"type":"thinking","thinking":"t"}]}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":"x","thinking_blocks":"nope"}]}`,
	} {
		_, err := anthropic.TranslateRequest([]byte(bad), 4096)
		var e *apierr.Error
		if !errors.As(err, &e) || e.Kind != apierr.InvalidRequest || !strings.Contains(e.Message, "thinking_blocks") {
			t.Errorf("%s: err %v, want a 400 naming thinking_blocks", bad, err)
		}
	}
}

// TestTranslateRequestTooDeep: a body, or a tool call's arguments (a JSON
// text inside a string, which the gateway's check of the body does not
// see), nested deeper than wire.MaxDepth is a 400, never a stack overflow.
// The stack is capped so that a recursive parse fails fast.
func TestTranslateRequestTooDeep(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	deep := strings.Repeat("[", 5_800_000)
	for _, tt := range []struct{ name, body string }{
		{"body", `{"model":"claude","x":` + deep},
		{"tool call arguments", `{"model":"claude","messages":[{"role":"assistant","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"` + deep + `"}}]}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := anthropic.TranslateRequest([]byte(tt.body), 100)
			var e *apierr.Error
			if !errors.As(err, &e) || e.HTTPStatus() != 400 || !strings.Contains(e.Message, "deeper than") {
				t.Fatalf("err = %v, want a 400 about nesting", err)
			}
		})
	}
}

func TestTranslateRequestDepthAtBound(t *testing.T) {
	n := wire.MaxDepth - 1 // the request object is one level more
	args := `{\"a\":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`
	body := `{"model":"claude","x":` + strings.Repeat("[", n) + strings.Repeat("]", n) +
		`,"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"` + args + `"}}]}]}`
	out, err := anthropic.TranslateRequest([]byte(body), 100)
	if err != nil {
		t.Fatalf("a body MaxDepth deep was refused: %v", err)
	}
	if !strings.Contains(string(out), `"input":{"a":[[`) {
		t.Fatalf("tool call arguments lost: %.300s", out)
	}
}
