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

// translateCall is call's Messages API body, and whether the answer is in
// JSON mode (response_format answered by the json_tool_call tool).
func translateCall(d *config.Deployment, call wire.Call) ([]byte, bool, error) {
	if call.Op != wire.OpChat {
		return nil, false, apierr.New(apierr.InvalidRequest, "deployment %s (anthropic) serves chat completions only", d.ID)
	}
	def := DefaultMaxTokens
	if d.MaxOutputTokens > 0 && d.MaxOutputTokens < def {
		def = d.MaxOutputTokens
	}
	return translate(call.Body, Options{DefaultMaxTokens: def, DropParams: d.DropParams || call.DropParams})
}

// send posts a Messages API body to Anthropic's API (d's base).
func (p *Provider) send(ctx context.Context, d *config.Deployment, body []byte, stream bool) (*http.Response, error) {
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
		return nil, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["Anthropic-Version"] = []string{Version}
	if stream {
		req.Header["Accept"] = []string{"text/event-stream"}
	}
	if k := d.Key(); k != "" {
		req.Header["X-Api-Key"] = []string{k}
	}
	return p.client.Do(req)
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
	jsonSchema, err := ResponseFormatSchema(r.Get("response_format"))
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
