package anthropic_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
)

// The signed thinking blocks come back as thinking_blocks beside
// reasoning_content (as in LiteLLM), so that a tool loop with thinking on can
// send them back.
func TestThinkingBlocksResponse(t *testing.T) {
	f := newFake(t)
	f.set(200, "message_thinking.json")
	resp, err := doBody(t, f.deployment(), `{"model":"claude-sonnet-4-20250514","messages":[{"role":"user","content":"weather?"}],"reasoning_effort":"low"}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := gjson.GetBytes(b, "choices.0.message")
	jsonEqual(t, []byte(m.Get("thinking_blocks").Raw), `[{"type":"thinking","thinking":"Need the weather.","signature":"EqQBCgIYAhIMsig1"},
	  {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"}]`)
	if m.Get("reasoning_content").String() != "Need the weather." || m.Get("tool_calls.0.function.name").String() != "get_weather" {
		t.Fatalf("message %s", m.Raw)
	}
}

func TestThinkingBlocksStream(t *testing.T) {
	f := newFake(t)
	f.set(200, "stream_tool.sse")
	evs := streamed(t)(do(t, f, true, false))
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
