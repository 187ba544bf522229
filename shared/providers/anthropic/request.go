// Package anthropic speaks Anthropic's Messages API (POST /v1/messages) for
// deployments named anthropic/<model>. The gateway speaks OpenAI's chat
// format on both sides: the request is translated to a Messages request, and
// the answer (JSON or Anthropic's event stream) back to an OpenAI chat
// completion or OpenAI SSE chunks, presented as a plain *http.Response so the
// gateway reads it as it reads any OpenAI upstream.
package anthropic

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Version is the anthropic-version header sent with every request.
const Version = "2023-06-01"

// DefaultBase is Anthropic's API base URL.
const DefaultBase = "https://api.anthropic.com"

// DefaultMaxTokens is max_tokens when the client sends none (Anthropic
// requires it) and the deployment's output limit is unknown.
const DefaultMaxTokens = 4096

// newRequest builds the upstream request and says whether the answer is in
// JSON mode (response_format answered by the json_tool_call tool).
func newRequest(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Request, bool, error) {
	if call.Op != wire.OpChat {
		return nil, false, apierr.New(apierr.InvalidRequest, "deployment %s (anthropic) serves chat completions only", d.ID)
	}
	def := DefaultMaxTokens
	if d.MaxOutputTokens > 0 && d.MaxOutputTokens < def {
		def = d.MaxOutputTokens
	}
	body, jsonMode, err := translate(call.Body, Options{DefaultMaxTokens: def, DropParams: d.DropParams || call.DropParams})
	if err != nil {
		return nil, false, err
	}
	base := strings.TrimSuffix(d.APIBase, "/")
	if base == "" {
		base = DefaultBase
	}
	url := base + "/v1/messages"
	if strings.HasSuffix(base, "/v1") {
		url = base + "/messages"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["Anthropic-Version"] = []string{Version}
	if call.Stream {
		req.Header["Accept"] = []string{"text/event-stream"}
	}
	if d.APIKey != "" {
		req.Header["X-Api-Key"] = []string{d.APIKey}
	}
	return req, jsonMode, nil
}

func badRequest(format string, args ...any) *apierr.Error {
	return apierr.New(apierr.InvalidRequest, format, args...)
}

// message is one Messages API message being built: consecutive OpenAI
// messages of the same Anthropic role are merged (Anthropic wants turns to
// alternate, and tool results are user content).
type message struct {
	role   string
	blocks []byte // comma-separated content blocks
}

// JSONToolName is the tool a response_format is asked for with (LiteLLM's
// RESPONSE_FORMAT_TOOL_NAME): its input is the JSON answer.
const JSONToolName = "json_tool_call"

// Options tune a translation.
type Options struct {
	// DefaultMaxTokens is max_tokens when the body sets neither max_tokens
	// nor max_completion_tokens.
	DefaultMaxTokens int
	// DropParams drops the OpenAI params Anthropic has no counterpart for;
	// without it (nor the body's own drop_params) they are a 400.
	DropParams bool
}

// TranslateRequest turns an OpenAI chat completions body into a Messages API
// body. defaultMaxTokens is used when the body sets neither max_tokens nor
// max_completion_tokens.
func TranslateRequest(body []byte, defaultMaxTokens int) ([]byte, error) {
	out, _, err := translate(body, Options{DefaultMaxTokens: defaultMaxTokens})
	return out, err
}

// translate is TranslateRequest; jsonMode says a response_format was turned
// into the json_tool_call tool, whose input is to be the answer's content.
func translate(body []byte, o Options) (out []byte, jsonMode bool, err error) {
	defaultMaxTokens := o.DefaultMaxTokens
	if err := wire.CheckDepth(body); err != nil { // before gjson recurses
		return nil, false, badRequest("%s", err)
	}
	if !gjson.ValidBytes(body) {
		return nil, false, badRequest("the request body is not valid JSON")
	}
	r := gjson.ParseBytes(body)
	if err := checkParams(r, o.DropParams, r.Get("model").String()); err != nil {
		return nil, false, err
	}
	out = make([]byte, 0, len(body)+256)
	out = append(out, `{"model":`...)
	out = wire.AppendString(out, r.Get("model").String())

	var system []byte
	var msgs []message
	add := func(role string, blocks []byte) {
		if len(blocks) == 0 {
			return
		}
		if n := len(msgs); n > 0 && msgs[n-1].role == role {
			msgs[n-1].blocks = append(append(msgs[n-1].blocks, ','), blocks...)
			return
		}
		msgs = append(msgs, message{role: role, blocks: blocks})
	}
	r.Get("messages").ForEach(func(_, m gjson.Result) bool {
		role := m.Get("role").String()
		content := m.Get("content")
		var blocks []byte
		switch role {
		case "system", "developer":
			if blocks, err = contentBlocks(nil, content, false); err == nil && len(blocks) > 0 {
				if len(system) > 0 {
					system = append(system, ',')
				}
				system = append(system, blocks...)
			}
		case "user":
			if blocks, err = contentBlocks(nil, content, true); err == nil {
				add("user", blocks)
			}
		case "assistant":
			// Signed thinking first: Anthropic wants it back, ahead of the
			// tool_use it led to, to continue a tool loop with thinking on.
			if blocks, err = thinkingBlocks(nil, m.Get("thinking_blocks")); err != nil {
				return false
			}
			if blocks, err = contentBlocks(blocks, content, false); err != nil {
				return false
			}
			m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
				if len(blocks) > 0 {
					blocks = append(blocks, ',')
				}
				blocks = append(blocks, `{"type":"tool_use","id":`...)
				blocks = wire.AppendString(blocks, tc.Get("id").String())
				blocks = append(blocks, `,"name":`...)
				blocks = wire.AppendString(blocks, tc.Get("function.name").String())
				blocks = append(blocks, `,"input":`...)
				args := strings.TrimSpace(tc.Get("function.arguments").String())
				if args != "" && wire.CheckDepth([]byte(args)) != nil { // a JSON text in a string: not checked with the body
					err = badRequest("messages: tool call arguments nest deeper than %d levels", wire.MaxDepth)
					return false
				}
				if args == "" || !gjson.Valid(args) || !gjson.Parse(args).IsObject() {
					args = "{}"
				}
				blocks = append(blocks, args...)
				blocks = append(blocks, '}')
				return true
			})
			add("assistant", blocks)
		case "tool":
			blocks = append(blocks, `{"type":"tool_result","tool_use_id":`...)
			blocks = wire.AppendString(blocks, m.Get("tool_call_id").String())
			blocks = append(blocks, `,"content":`...)
			if content.IsArray() {
				var inner []byte
				if inner, err = contentBlocks(nil, content, true); err != nil {
					return false
				}
				blocks = append(append(append(blocks, '['), inner...), ']')
			} else {
				blocks = wire.AppendString(blocks, content.String())
			}
			blocks = append(blocks, '}')
			add("user", blocks)
		default:
			err = badRequest("messages: role %q is not supported by Anthropic deployments", role)
		}
		return err == nil
	})
	if err != nil {
		return nil, false, err
	}
	if len(system) > 0 {
		out = append(out, `,"system":[`...)
		out = append(out, system...)
		out = append(out, ']')
	}
	out = append(out, `,"messages":[`...)
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"role":"`...)
		out = append(out, m.role...)
		out = append(out, `","content":[`...)
		out = append(out, m.blocks...)
		out = append(out, "]}"...)
	}
	out = append(out, ']')

	maxTokens := r.Get("max_completion_tokens").Int()
	if maxTokens <= 0 {
		maxTokens = r.Get("max_tokens").Int()
	}
	if maxTokens <= 0 {
		maxTokens = int64(defaultMaxTokens)
	}
	thinking := r.Get("thinking")
	var budget int64
	if !thinking.Exists() {
		switch r.Get("reasoning_effort").String() {
		case "low", "minimal":
			budget = 1024
		case "medium":
			budget = 2048
		case "high":
			budget = 4096
		}
	} else {
		budget = thinking.Get("budget_tokens").Int()
	}
	if budget > math.MaxInt32 { // no model thinks that long; budget + the default would overflow
		return nil, false, badRequest("thinking.budget_tokens must be at most %d", math.MaxInt32)
	}
	if budget > 0 && maxTokens <= budget {
		maxTokens = budget + int64(defaultMaxTokens)
	}
	out = append(out, `,"max_tokens":`...)
	out = strconv.AppendInt(out, maxTokens, 10)
	switch {
	case thinking.Exists():
		out = append(out, `,"thinking":`...)
		out = append(out, thinking.Raw...)
	case budget > 0:
		out = append(out, `,"thinking":{"type":"enabled","budget_tokens":`...)
		out = strconv.AppendInt(out, budget, 10)
		out = append(out, '}')
	}
	for _, k := range [...]string{"temperature", "top_p", "top_k"} {
		if v := r.Get(k); v.Type == gjson.Number {
			out = append(out, ',', '"')
			out = append(out, k...)
			out = append(out, '"', ':')
			out = append(out, v.Raw...)
		}
	}
	switch stop := r.Get("stop"); {
	case stop.Type == gjson.String:
		out = append(out, `,"stop_sequences":[`...)
		out = wire.AppendString(out, stop.Str)
		out = append(out, ']')
	case stop.IsArray() && len(stop.Array()) > 0:
		out = append(out, `,"stop_sequences":`...)
		out = append(out, stop.Raw...)
	}
	if r.Get("stream").Bool() {
		out = append(out, `,"stream":true`...)
	}
	if u := r.Get("user").String(); u != "" {
		out = append(out, `,"metadata":{"user_id":`...)
		out = wire.AppendString(out, u)
		out = append(out, '}')
	}
	jsonSchema, err := responseFormatSchema(r.Get("response_format"))
	if err != nil {
		return nil, false, err
	}
	thinkingOn := budget > 0 || thinking.Get("type").String() == "enabled"
	if out, err = appendTools(out, r, jsonSchema, !thinkingOn); err != nil {
		return nil, false, err
	}
	out = append(out, '}')
	return out, jsonSchema != nil, nil
}

// checkParams refuses the OpenAI params that the Messages API has no
// counterpart for (LiteLLM's AnthropicConfig.get_supported_openai_params
// lists none of them), naming them in a 400 as LiteLLM's
// UnsupportedParamsError does, unless drop_params is set (deployment or
// request): then they are dropped. Null is unset; n 1 and logprobs false
// ask for nothing Anthropic does not do.
func checkParams(r gjson.Result, drop bool, model string) error {
	if drop {
		return nil
	}
	var names []string
	r.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "drop_params":
			drop = v.Bool()
			return !drop
		case "n":
			if v.Type == gjson.Number && v.Num == 1 {
				return true
			}
		case "logprobs":
			if v.Type == gjson.False {
				return true
			}
		case "top_logprobs", "presence_penalty", "frequency_penalty", "seed", "logit_bias",
			"functions", "function_call", "modalities", "audio", "prediction":
		default:
			return true
		}
		if v.Type != gjson.Null {
			names = append(names, k.Str)
		}
		return true
	})
	if drop || len(names) == 0 {
		return nil
	}
	e := badRequest("anthropic does not support parameters: [%s], for model=%s. To drop these, set \"drop_params\": true in the request, or litellm_settings: drop_params: true in the config",
		strings.Join(names, ", "), model)
	e.Param = names[0]
	return e
}

// responseFormatSchema is the input_schema of the json_tool_call tool that
// stands for response_format (as in LiteLLM: Anthropic has no JSON mode),
// or nil when there is none to ask for.
func responseFormatSchema(rf gjson.Result) ([]byte, error) {
	if !rf.IsObject() {
		return nil, nil // LiteLLM reads a mapping only
	}
	switch typ := rf.Get("type").String(); typ {
	case "text":
		return nil, nil
	case "json_object":
		// Anthropic refuses an object schema without properties.
		return []byte(`{"type":"object","additionalProperties":true,"properties":{}}`), nil
	case "json_schema":
		schema := rf.Get("json_schema.schema")
		if !schema.Exists() {
			schema = rf.Get("response_schema") // LiteLLM's own spelling
		}
		switch {
		case !schema.Exists() || schema.Type == gjson.Null:
			return []byte(`{"type":"object","additionalProperties":true,"properties":{}}`), nil
		case !schema.IsObject():
			return nil, badRequest("response_format: json_schema.schema must be a JSON Schema object")
		case schema.Get("type").Exists():
			return []byte(schema.Raw), nil
		}
		// LiteLLM starts from {"type":"object"} and adds the schema's keys.
		inner := strings.TrimSpace(schema.Raw[1:])
		out := append([]byte(nil), `{"type":"object"`...)
		if inner != "}" {
			out = append(out, ',')
		}
		return append(out, inner...), nil
	default:
		return nil, badRequest("response_format: type %q is not supported (text, json_object, json_schema)", typ)
	}
}

// appendTools writes tools and tool_choice. A non-nil jsonSchema adds the
// json_tool_call tool after the request's own (LiteLLM keeps both), forced
// when force is set (Anthropic refuses a forced tool while thinking).
func appendTools(out []byte, r gjson.Result, jsonSchema []byte, force bool) ([]byte, error) {
	tools := r.Get("tools")
	n := 0
	tools.ForEach(func(_, t gjson.Result) bool {
		if t.Get("type").String() != "function" && t.Get("type").Exists() {
			return true
		}
		f := t.Get("function")
		if n == 0 {
			out = append(out, `,"tools":[`...)
		} else {
			out = append(out, ',')
		}
		n++
		out = append(out, `{"name":`...)
		out = wire.AppendString(out, f.Get("name").String())
		if d := f.Get("description"); d.Type == gjson.String {
			out = append(out, `,"description":`...)
			out = wire.AppendString(out, d.Str)
		}
		out = append(out, `,"input_schema":`...)
		if p := f.Get("parameters"); p.IsObject() {
			out = append(out, p.Raw...)
		} else {
			out = append(out, `{"type":"object","properties":{}}`...)
		}
		if cc := t.Get("cache_control"); cc.IsObject() {
			out = append(out, `,"cache_control":`...)
			out = append(out, cc.Raw...)
		}
		out = append(out, '}')
		return true
	})
	if jsonSchema != nil {
		if n == 0 {
			out = append(out, `,"tools":[`...)
		} else {
			out = append(out, ',')
		}
		n++
		out = append(out, `{"name":"`+JSONToolName+`","input_schema":`...)
		out = append(out, jsonSchema...)
		out = append(out, '}')
	}
	if n > 0 {
		out = append(out, ']')
	}
	if jsonSchema != nil && force {
		// The answer must come as this tool's input; the request's own
		// tool_choice cannot stand beside it.
		return append(out, `,"tool_choice":{"type":"tool","name":"`+JSONToolName+`"}`...), nil
	}
	tc := r.Get("tool_choice")
	noParallel := r.Get("parallel_tool_calls").Type == gjson.False
	var choice string
	switch {
	case tc.Type == gjson.String:
		switch tc.Str {
		case "auto":
			choice = `{"type":"auto"`
		case "required":
			choice = `{"type":"any"`
		case "none":
			choice = `{"type":"none"`
		default:
			return nil, badRequest("tool_choice %q is not supported", tc.Str)
		}
	case tc.IsObject():
		name := tc.Get("function.name").String()
		if name == "" {
			return nil, badRequest("tool_choice: function.name is required")
		}
		choice = `{"type":"tool","name":` + string(wire.AppendString(nil, name))
	case noParallel && n > 0:
		choice = `{"type":"auto"`
	}
	if choice != "" && n > 0 {
		out = append(out, `,"tool_choice":`...)
		out = append(out, choice...)
		if noParallel && choice != `{"type":"none"` {
			out = append(out, `,"disable_parallel_tool_use":true`...)
		}
		out = append(out, '}')
	}
	return out, nil
}

// thinkingBlocks appends an assistant message's thinking_blocks (LiteLLM's
// field, as our answers carry them) as thinking and redacted_thinking blocks.
func thinkingBlocks(out []byte, tbs gjson.Result) ([]byte, error) {
	if !tbs.Exists() || tbs.Type == gjson.Null {
		return out, nil
	}
	if !tbs.IsArray() {
		return nil, badRequest("messages: thinking_blocks must be a list")
	}
	var err error
	tbs.ForEach(func(_, tb gjson.Result) bool {
		if len(out) > 0 {
			out = append(out, ',')
		}
		switch typ := tb.Get("type").String(); typ {
		case "thinking":
			sig := tb.Get("signature")
			if sig.Type != gjson.String || sig.Str == "" {
				err = badRequest("messages: a thinking block in thinking_blocks needs its signature")
				return false
			}
			out = append(out, `{"type":"thinking","thinking":`...)
			out = wire.AppendString(out, tb.Get("thinking").String())
			out = append(out, `,"signature":`...)
			out = wire.AppendString(out, sig.Str)
		case "redacted_thinking":
			data := tb.Get("data")
			if data.Type != gjson.String || data.Str == "" {
				err = badRequest("messages: a redacted_thinking block in thinking_blocks needs its data")
				return false
			}
			out = append(out, `{"type":"redacted_thinking","data":`...)
			out = wire.AppendString(out, data.Str)
		default:
			err = badRequest("messages: thinking_blocks type %q is not supported (thinking, redacted_thinking)", typ)
			return false
		}
		out = append(out, '}')
		return true
	})
	return out, err
}

// contentBlocks appends the Anthropic content blocks of an OpenAI message
// content (a string or an array of parts). Images are allowed in user
// content only.
func contentBlocks(out []byte, content gjson.Result, images bool) ([]byte, error) {
	if content.Type == gjson.String {
		if content.Str == "" {
			return out, nil
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"type":"text","text":`...)
		out = wire.AppendString(out, content.Str)
		return append(out, '}'), nil
	}
	if !content.IsArray() {
		return out, nil // null content (an assistant turn with tool calls only)
	}
	var err error
	content.ForEach(func(_, p gjson.Result) bool {
		start := len(out)
		if start > 0 {
			out = append(out, ',')
		}
		switch typ := p.Get("type").String(); typ {
		case "text":
			t := p.Get("text").String()
			if t == "" {
				out = out[:start]
				return true
			}
			out = append(out, `{"type":"text","text":`...)
			out = wire.AppendString(out, t)
		case "image_url":
			if !images {
				err = badRequest("images are allowed in user messages only")
				return false
			}
			url := p.Get("image_url.url").String()
			if url == "" {
				url = p.Get("image_url").String()
			}
			if out, err = appendImage(out, url); err != nil {
				return false
			}
		default:
			err = badRequest("content part type %q is not supported by Anthropic deployments", typ)
			return false
		}
		if cc := p.Get("cache_control"); cc.IsObject() {
			out = append(out, `,"cache_control":`...)
			out = append(out, cc.Raw...)
		}
		out = append(out, '}')
		return true
	})
	return out, err
}

// appendImage writes an image block (without its closing brace) from a data
// URL (base64 source) or an http(s) URL (url source, fetched by Anthropic).
func appendImage(out []byte, url string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		media, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 || !strings.HasPrefix(media, "image/") {
			return nil, badRequest("image_url: a data URL must be data:image/<type>;base64,<data>")
		}
		out = append(out, `{"type":"image","source":{"type":"base64","media_type":`...)
		out = wire.AppendString(out, media)
		out = append(out, `,"data":`...)
		out = wire.AppendString(out, data)
		return append(out, '}'), nil
	}
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		out = append(out, `{"type":"image","source":{"type":"url","url":`...)
		out = wire.AppendString(out, url)
		return append(out, '}'), nil
	}
	return nil, badRequest("image_url: expected a data URL or an http(s) URL")
}
