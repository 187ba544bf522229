package gatewaytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
)

// ChatOnly is an OpenAI-compatible server that serves POST
// /v1/chat/completions and nothing else, as vLLM, Ollama and most such
// servers: any other path is a 404 {"detail":"Not Found"} (FastAPI's, as
// vLLM answers), or a 405 when NoRoute says so.
//
// It answers a conversation whose last message is a tool result with
// "The tool said <result>. SLUICE-DONE", a response_format json_schema with
// StructuredAnswer, a request with tools whose last
// user text asks to "use the tool" with a call of the tool ToolArgs names
// (the first tool it knows among those offered), and anything else with
// "Hello from chat."; streamed when asked (the tool call's arguments in
// fragments), with its usage when stream_options.include_usage asks.
type ChatOnly struct {
	*httptest.Server
	// NoRoute is the status of the paths it does not serve (404 when 0).
	NoRoute int

	mu    sync.Mutex
	paths []string
}

// flush sends what w holds, when it can.
func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// ToolArgs are the arguments the fake calls a tool with, by tool name:
// Claude Code's Bash, Codex's exec_command and shell, and get_weather.
var ToolArgs = map[string]string{
	"Bash":         `{"command":"echo sluice-tool-ran","description":"Print a word"}`,
	"exec_command": `{"cmd":"echo sluice-tool-ran"}`,
	"shell":        `{"command":["echo","sluice-tool-ran"]}`,
	"get_weather":  `{"location":"Paris"}`,
}

// StructuredAnswer is the fakes' answer to a response_format json_schema
// (the chat server's own; Anthropic's and Bedrock's as the json_tool_call
// tool's input).
const StructuredAnswer = `{"city":"Paris","temp_c":18}`

// NewChatOnly starts a ChatOnly server until the test ends.
func NewChatOnly(t testing.TB) *ChatOnly {
	c := &ChatOnly{}
	c.Server = Upstream(t, c.serve)
	return c
}

// Paths are the paths requested so far, in order.
func (c *ChatOnly) Paths() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...)
}

func (c *ChatOnly) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.paths = append(c.paths, r.URL.Path)
	c.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		status := c.NoRoute
		if status == 0 {
			status = http.StatusNotFound
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"detail":"`+http.StatusText(status)+`"}`)
		return
	}
	req := gjson.ParseBytes(body)
	msgs := req.Get("messages").Array()
	if len(msgs) == 0 {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"messages: at least one message is required","type":"BadRequestError"}}`)
		return
	}
	for _, m := range msgs {
		if role := m.Get("role").Str; role != "system" && role != "user" && role != "assistant" && role != "tool" && role != "developer" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":"unknown role %q","type":"BadRequestError"}}`, role)
			return
		}
	}
	last := msgs[len(msgs)-1]
	var text, tool, args string
	switch {
	case last.Get("role").Str == "tool":
		text = "The tool said " + strings.TrimSpace(contentText(last.Get("content"))) + ". SLUICE-DONE"
	case strings.Contains(lastUserText(msgs), "use the tool"):
		req.Get("tools").ForEach(func(_, t gjson.Result) bool {
			name := t.Get("function.name").Str
			if a, ok := ToolArgs[name]; ok {
				tool, args = name, a
				return false
			}
			return true
		})
	}
	if text == "" && tool == "" && req.Get("response_format.type").Str == "json_schema" {
		text = StructuredAnswer
	}
	if text == "" && tool == "" {
		text = "Hello from chat."
	}
	finish := "stop"
	if tool != "" {
		finish = "tool_calls"
	}
	usage := `{"prompt_tokens":30,"completion_tokens":5,"total_tokens":35}`
	if !req.Get("stream").Bool() {
		msg := map[string]any{"role": "assistant", "content": text}
		if tool != "" {
			msg["content"] = nil
			msg["tool_calls"] = []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": tool, "arguments": args}}}
		}
		m, _ := json.Marshal(msg)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":%q,"choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":%s}`,
			req.Get("model").Str, m, finish, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta, finish string) {
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", req.Get("model").Str, delta, finish)
		flush(w)
	}
	chunk(`{"role":"assistant","content":""}`, "null")
	if tool != "" {
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"`+tool+`","arguments":""}}]}`, "null")
		for len(args) > 0 {
			n := min(9, len(args))
			a, _ := json.Marshal(args[:n])
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(a)+`}}]}`, "null")
			args = args[n:]
		}
	} else {
		for _, word := range strings.SplitAfter(text, " ") {
			q, _ := json.Marshal(word)
			chunk(`{"content":`+string(q)+`}`, "null")
		}
	}
	q, _ := json.Marshal(finish)
	chunk(`{}`, string(q))
	if req.Get("stream_options.include_usage").Bool() {
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":%q,\"choices\":[],\"usage\":%s}\n\n", req.Get("model").Str, usage)
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

// contentText is a message content's text: a string, or its text parts.
func contentText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var b strings.Builder
	c.ForEach(func(_, p gjson.Result) bool {
		b.WriteString(p.Get("text").Str)
		return true
	})
	return b.String()
}

// lastUserText is the text of the last user message.
func lastUserText(msgs []gjson.Result) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Get("role").Str == "user" {
			return contentText(msgs[i].Get("content"))
		}
	}
	return ""
}

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
