package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
)

// fakeClaude is a small Anthropic Messages API that records what reaches it:
// it answers a tool result with text, a request with its get_weather tool
// with a tool use,
// a request with thinking with a signed thinking block and text, anything
// else with a greeting; streamed or not, with Anthropic's usage (cache
// reads and writes included). count_tokens answers 42.
type fakeClaude struct {
	url string
	mu  sync.Mutex
	got []claudeRequest
}

type claudeRequest struct {
	path   string
	body   string
	header http.Header
}

// The usage every answer reports: 20 uncached input tokens, 8 read from the
// cache, 4 written to it, 6 output tokens.
const claudeUsage = `"input_tokens":20,"cache_read_input_tokens":8,"cache_creation_input_tokens":4,"output_tokens":6`

func newFakeClaude(t *testing.T) *fakeClaude {
	f := &fakeClaude{}
	f.url = gatewaytest.Upstream(t, f.serve).URL
	return f
}

func (f *fakeClaude) requests() []claudeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]claudeRequest(nil), f.got...)
}

func (f *fakeClaude) last(t *testing.T) claudeRequest {
	t.Helper()
	rs := f.requests()
	if len(rs) == 0 {
		t.Fatal("nothing reached the fake Anthropic API")
	}
	return rs[len(rs)-1]
}

// Models named ...errfirst... stream an error event first, ...cutafter...
// drop the connection after the first text delta, ...overloaded... answer
// 529.
func (f *fakeClaude) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.got = append(f.got, claudeRequest{path: r.URL.Path, body: string(body), header: r.Header.Clone()})
	f.mu.Unlock()
	if r.Header.Get("X-Api-Key") != "sk-ant-fake" {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		return
	}
	req := gjson.ParseBytes(body)
	if r.URL.Path == "/v1/messages/count_tokens" {
		io.WriteString(w, `{"input_tokens":42}`)
		return
	}
	model := req.Get("model").Str
	if strings.Contains(model, "overloaded") {
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		return
	}
	msgs := req.Get("messages").Array()
	lastContent := msgs[len(msgs)-1].Get("content")
	var blocks []string // content blocks, as JSON
	stop := "end_turn"
	switch {
	case lastContent.Get("0.type").Str == "tool_result":
		res := lastContent.Get("0.content")
		if res.IsArray() {
			res = res.Get("0.text")
		}
		blocks = append(blocks, fmt.Sprintf(`{"type":"text","text":"It is %s in Paris."}`, res.Str))
	case req.Get(`tools.#(name=="get_weather")`).Exists():
		blocks = append(blocks, `{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"location":"Paris"}}`)
		stop = "tool_use"
	case req.Get("thinking").Exists():
		blocks = append(blocks, `{"type":"thinking","thinking":"Let me think.","signature":"sig-xyz"}`, `{"type":"text","text":"Thought it through."}`)
	default:
		blocks = append(blocks, `{"type":"text","text":"Hello from Claude."}`)
	}
	if !req.Get("stream").Bool() {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_01","type":"message","role":"assistant","model":%q,"content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":{%s}}`,
			model, strings.Join(blocks, ","), stop, claudeUsage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		w.(http.Flusher).Flush()
	}
	if strings.Contains(model, "errfirst") { // an error event before anything else
		send("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		return
	}
	send("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"cache_read_input_tokens":8,"cache_creation_input_tokens":4,"output_tokens":1}}}`, model))
	send("ping", `{"type":"ping"}`)
	for i, b := range blocks {
		blk := gjson.Parse(b)
		switch blk.Get("type").Str {
		case "text":
			send("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
			for _, word := range strings.SplitAfter(blk.Get("text").Str, " ") {
				send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%q}}`, i, word))
				if strings.Contains(model, "cutafter") { // the connection drops after content
					panic(http.ErrAbortHandler)
				}
			}
		case "thinking":
			send("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":"","signature":""}}`, i))
			send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":%q}}`, i, blk.Get("thinking").Str))
			send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"signature_delta","signature":%q}}`, i, blk.Get("signature").Str))
		case "tool_use":
			send("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}`, i))
			in := blk.Get("input").Raw
			for len(in) > 0 {
				n := min(7, len(in))
				send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%q}}`, i, in[:n]))
				in = in[n:]
			}
		}
		send("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
	}
	send("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":6}}`, stop))
	send("message_stop", `{"type":"message_stop"}`)
}

// toolsChatDeployment is the config line of "gpt-tools", an OpenAI
// deployment in front of a fake chat API that checks the translated
// request (tools as functions, the tool result as a tool message after the
// assistant's tool call) and answers with a tool call, streamed in
// fragments, or, after the tool result, with text.
func toolsChatDeployment(t *testing.T) string {
	srv := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := gjson.ParseBytes(body)
		msgs := req.Get("messages").Array()
		last := msgs[len(msgs)-1]
		bad := func(msg string) {
			t.Errorf("translated request: %s: %s", msg, body)
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":%q}}`, msg)
		}
		if req.Get("tools.0.type").Str != "function" || req.Get("tools.0.function.name").Str != "get_weather" ||
			!req.Get("tools.0.function.parameters.properties.location").Exists() || req.Get("max_tokens").Int() != 100 {
			bad("tools")
			return
		}
		stream := req.Get("stream").Bool()
		if stream && !req.Get("stream_options.include_usage").Bool() {
			bad("no include_usage")
			return
		}
		usage := `{"prompt_tokens":30,"completion_tokens":5,"total_tokens":35}`
		if last.Get("role").Str == "tool" {
			prev := msgs[len(msgs)-2]
			if last.Get("tool_call_id").Str != "call_1" || prev.Get("tool_calls.0.function.arguments").Str != `{"location":"Paris"}` {
				bad("tool result")
				return
			}
			text := "It is " + last.Get("content").Str + " in Paris."
			if !stream {
				fmt.Fprintf(w, `{"id":"chatcmpl-2","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":%s}`, text, usage)
				return
			}
			bad("stream after the tool result")
			return
		}
		if !stream {
			bad("tool call not streamed")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
		}
		chunk(`{"role":"assistant","content":null}`, "null")
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "null")
		for _, frag := range []string{`{"loc`, `ation":`, `"Paris"}`} {
			chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"arguments":%q}}]}`, frag), "null")
		}
		chunk(`{}`, `"tool_calls"`)
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[],\"usage\":%s}\n\ndata: [DONE]\n\n", usage)
	})
	return "  - model_name: gpt-tools\n    litellm_params: {model: openai/gpt-4o, api_base: " + srv.URL + ", api_key: sk-openai}\n"
}

// TestClaudeCode runs the real Claude Code client (`claude -p`) against the
// gateway in front of the fake Anthropic API, when it is installed
// (CLAUDE_CODE_BIN, or claude on PATH; test/run.sh installs it pinned):
// its requests (/v1/messages?beta=true, its betas, tools and model names)
// pass through, and it prints the fake's answer.
func TestClaudeCode(t *testing.T) {
	bin := os.Getenv("CLAUDE_CODE_BIN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("claude"); err != nil {
			const msg = "Claude Code is not installed (npm i @anthropic-ai/claude-code; or set CLAUDE_CODE_BIN)"
			if os.Getenv("CI") != "" {
				t.Fatal(msg + " (CI is set: test/run.sh installs it, so the agent test must run)")
			}
			t.Skip(msg)
		}
	}
	f := newMessagesFixture(t, `  - model_name: "*"
    litellm_params: {model: anthropic/*, api_base: CLAUDE_URL, api_key: sk-ant-fake}`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound on a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "hi")
	home := t.TempDir()
	cmd.Dir = home
	cmd.Env = []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + f.srv.URL,
		"ANTHROPIC_AUTH_TOKEN=sk-master",
		// Nothing but the gateway: no telemetry, updates or error reports.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	// The fake greets, or, asked to think (as Claude Code asks some
	// models), answers after a signed thinking block.
	if !strings.Contains(string(out), "Hello from Claude.") && !strings.Contains(string(out), "Thought it through.") {
		t.Errorf("claude -p printed %q", out)
	}
	var paths []string
	for _, r := range f.claude.requests() {
		paths = append(paths, r.path+" "+r.header.Get("Anthropic-Beta"))
	}
	if len(paths) == 0 {
		t.Fatal("nothing reached Anthropic")
	}
	t.Logf("requests that reached the fake Anthropic API: %q", paths)
}
