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
