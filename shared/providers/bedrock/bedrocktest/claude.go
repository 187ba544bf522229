package bedrocktest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// claude answers InvokeModel, InvokeModelWithResponseStream and CountTokens
// for Anthropic model ids as Bedrock does for Claude: the Messages API's
// body (with Bedrock's anthropic_version, without model and stream) in,
// Anthropic's message or its stream events (each the payload of a chunk
// frame) out. A request with the get_weather tool gets a tool use, one with thinking a
// signed thinking block and text, anything else "Hello from <Name>."; an
// agent's turn asking to "use the tool" gets a call of the tool
// gatewaytest.ToolArgs knows, and its result "The tool said <it>.
// SLUICE-DONE";
// a system message among the turns is refused (Bedrock's 400 for Claude
// models before Opus 4.8); CountTokens answers 42, but for a model id holding "nocount", which it
// cannot count (Bedrock's 400 for such a model), and a body holding a
// document (which Bedrock does not count either).
func (s *Server) claude(w http.ResponseWriter, id, op string, f Fault, body []byte) {
	if op == "count-tokens" {
		if strings.Contains(id, "nocount") {
			apiError(w, 400, "ValidationException", "The provided model doesn't support counting tokens.")
			return
		}
		in, _ := base64.StdEncoding.DecodeString(gjson.GetBytes(body, "input.invokeModel.body").Str)
		if !gjson.ValidBytes(in) || !gjson.GetBytes(in, "messages").Exists() {
			apiError(w, 400, "ValidationException", "The provided request is not valid")
			return
		}
		if strings.Contains(string(in), `"type":"document"`) {
			apiError(w, 400, "ValidationException", "Document input not supported for token counting")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"inputTokens":42}`)
		return
	}
	req := gjson.ParseBytes(body)
	if req.Get("anthropic_version").Str != "bedrock-2023-05-31" || req.Get("model").Exists() || req.Get("stream").Exists() {
		apiError(w, 400, "ValidationException", "Malformed input request: anthropic_version, model or stream")
		return
	}
	if req.Get(`messages.#(role=="system")`).Exists() { // as Bedrock's Claude models before Opus 4.8
		apiError(w, 400, "ValidationException", `messages: Unexpected role "system". The Messages API accepts a top-level `+"`system`"+` parameter, not "system" as an input message role.`)
		return
	}
	var blocks []string
	stop := "end_turn"
	msgs := req.Get("messages").Array()
	lastBlock := msgs[len(msgs)-1].Get("content.0")
	agent, args := agentTool(lastText(msgs, "text"), req.Get("tools.#.name").Array())
	switch {
	case lastBlock.Get("type").Str == "tool_result" && agentTurn(msgs, "text"):
		res := lastBlock.Get("content")
		if res.IsArray() {
			res = res.Get("0.text")
		}
		b, _ := json.Marshal("The tool said " + strings.TrimSpace(res.Str) + ". SLUICE-DONE")
		blocks = []string{`{"type":"text","text":` + string(b) + `}`}
	case agent != "":
		blocks, stop = []string{`{"type":"tool_use","id":"toolu_bdrk_01","name":"` + agent + `","input":` + args + `}`}, "tool_use"
	case req.Get(`tools.#(name=="get_weather")`).Exists():
		blocks, stop = []string{`{"type":"tool_use","id":"toolu_bdrk_01","name":"get_weather","input":{"location":"Paris"}}`}, "tool_use"
	case req.Get("thinking").Exists():
		blocks = []string{`{"type":"thinking","thinking":"Let me think.","signature":"sig-bedrock"}`, `{"type":"text","text":"Thought it through."}`}
	default:
		b, _ := json.Marshal("Hello from " + s.Name + ".")
		blocks = []string{`{"type":"text","text":` + string(b) + `}`}
	}
	usage := fmt.Sprintf(`"input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d,"output_tokens":%d`, Usage.Input, Usage.CacheRead, Usage.CacheWrite, Usage.Output)
	if op == "invoke" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_bdrk_01","type":"message","role":"assistant","model":"claude","content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":{%s}}`,
			strings.Join(blocks, ","), stop, usage)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(200)
	event, exception := frames(w)
	chunk := func(ev string) {
		event("chunk", map[string]any{"bytes": []byte(ev)}) // base64, as Bedrock sends it
	}
	if f == ThrottleFirstFrame {
		exception("throttlingException", "Too many tokens, please wait before trying again.")
		return
	}
	chunk(`{"type":"message_start","message":{"id":"msg_bdrk_01","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{` + usage[:strings.LastIndex(usage, `,"output_tokens"`)] + `,"output_tokens":1}}}`)
	for i, b := range blocks {
		blk := gjson.Parse(b)
		switch blk.Get("type").Str {
		case "text":
			chunk(fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
			for j, word := range strings.SplitAfter(blk.Get("text").Str, " ") {
				q, _ := json.Marshal(word)
				chunk(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, q))
				if j == 0 && f == BreakAfterContent {
					exception("modelStreamErrorException", "The model stream broke.")
					return
				}
			}
		case "thinking":
			chunk(fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":""}}`, i))
			chunk(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":%q}}`, i, blk.Get("thinking").Str))
			chunk(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"signature_delta","signature":%q}}`, i, blk.Get("signature").Str))
		case "tool_use":
			chunk(fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_bdrk_01","name":%q,"input":{}}}`, i, blk.Get("name").Str))
			chunk(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%q}}`, i, blk.Get("input").Raw))
		}
		chunk(fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
	}
	chunk(fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, Usage.Output))
	chunk(fmt.Sprintf(`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":%d,"outputTokenCount":%d}}`, Usage.Input, Usage.Output))
}
