package anthropic

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/providers/openai"
	"github.com/sluice-gw/sluice/shared/wire"
)

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

// ResponseFormatSchema is the input_schema of the json_tool_call tool that
// stands for response_format (as in LiteLLM: Anthropic has no JSON mode;
// Claude on Bedrock's Converse takes the same tool), or nil when there is
// none to ask for.
func ResponseFormatSchema(rf gjson.Result) ([]byte, error) {
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
	tc, err := openai.ParseToolChoice(r.Get("tool_choice"))
	if err != nil {
		return nil, err
	}
	noParallel := r.Get("parallel_tool_calls").Type == gjson.False
	var choice string
	switch tc.Mode {
	case "auto":
		choice = `{"type":"auto"`
	case "required":
		choice = `{"type":"any"`
	case "none":
		choice = `{"type":"none"`
	case "function":
		choice = `{"type":"tool","name":` + string(wire.AppendString(nil, tc.Name))
	default:
		if noParallel && n > 0 {
			choice = `{"type":"auto"`
		}
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
