package gatewaytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Claude is a fake Anthropic Messages API for agents' turns, as ChatOnly
// is for chat: a conversation ending with a tool result gets "The tool
// said <result>. SLUICE-DONE", one whose last user text asks to "use the
// tool" a tool use of the tool ToolArgs names (the first it knows among
// those offered), one forcing the json_tool_call tool (a response_format)
// a call of it with StructuredAnswer, anything else "Hello from Claude."; streamed when asked;
// count_tokens answers 42. It checks the key (x-api-key: sk-ant-fake) and
// that messages hold only user and assistant turns and system ones (as
// Anthropic takes mid-conversation system messages).
type Claude struct {
	*httptest.Server
}

// NewClaude starts a Claude fake until the test ends.
func NewClaude(t testing.TB) *Claude {
	c := &Claude{}
	c.Server = Upstream(t, c.serve)
	return c
}

func (c *Claude) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	anthErr := func(status int, typ, msg string) {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
	}
	if r.Header.Get("X-Api-Key") != "sk-ant-fake" {
		anthErr(http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	}
	if r.URL.Path == "/v1/messages/count_tokens" {
		_, _ = io.WriteString(w, `{"input_tokens":42}`)
		return
	}
	req := gjson.ParseBytes(body)
	msgs := req.Get("messages").Array()
	if len(msgs) == 0 {
		anthErr(http.StatusBadRequest, "invalid_request_error", "messages: at least one message is required")
		return
	}
	var userText string
	for _, m := range msgs {
		switch m.Get("role").Str {
		case "user":
			userText = contentText(m.Get("content"))
		case "assistant", "system":
		default:
			anthErr(http.StatusBadRequest, "invalid_request_error", "messages: Unexpected role "+m.Get("role").Str)
			return
		}
	}
	last := msgs[len(msgs)-1].Get("content")
	var text, tool, args string
	stop := "end_turn"
	if req.Get("tool_choice.name").Str == "json_tool_call" { // a response_format, translated
		tool, args, stop = "json_tool_call", StructuredAnswer, "tool_use"
	} else if res := last.Get(`#(type=="tool_result")`); res.Exists() {
		text = "The tool said " + strings.TrimSpace(contentText(res.Get("content"))) + ". SLUICE-DONE"
	} else if strings.Contains(userText, "use the tool") {
		req.Get("tools").ForEach(func(_, t gjson.Result) bool {
			if a, ok := ToolArgs[t.Get("name").Str]; ok {
				tool, args, stop = t.Get("name").Str, a, "tool_use"
				return false
			}
			return true
		})
	}
	if text == "" && tool == "" {
		text = "Hello from Claude."
	}
	model := req.Get("model").Str
	const usage = `"input_tokens":20,"output_tokens":6`
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	if !req.Get("stream").Bool() {
		block := `{"type":"text","text":` + q(text) + `}`
		if tool != "" {
			block = `{"type":"tool_use","id":"toolu_1","name":` + q(tool) + `,"input":` + args + `}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":%s,"content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":{%s}}`, q(model), block, stop, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		flush(w)
	}
	send("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":`+q(model)+`,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":1}}}`)
	send("ping", `{"type":"ping"}`)
	if tool != "" {
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":`+q(tool)+`,"input":{}}}`)
		for len(args) > 0 {
			n := min(9, len(args))
			send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+q(args[:n])+`}}`)
			args = args[n:]
		}
	} else {
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for _, word := range strings.SplitAfter(text, " ") {
			send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+q(word)+`}}`)
		}
	}
	send("content_block_stop", `{"type":"content_block_stop","index":0}`)
	send("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":6}}`)
	send("message_stop", `{"type":"message_stop"}`)
}
