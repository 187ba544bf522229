package gemini

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/providers/openai"
)

// generationConfig maps the OpenAI sampling params, response_format and
// reasoning to Gemini's generationConfig; nil when the body sets none.
func generationConfig(r gjson.Result, model string) (*genConfig, error) {
	var gc genConfig
	set := false
	num := func(k string) json.RawMessage {
		if v := r.Get(k); v.Type == gjson.Number {
			set = true
			return json.RawMessage(v.Raw)
		}
		return nil
	}
	gc.Temperature, gc.TopP, gc.TopK = num("temperature"), num("top_p"), num("top_k")
	gc.Seed, gc.PresencePenalty, gc.FrequencyPenalty = num("seed"), num("presence_penalty"), num("frequency_penalty")
	maxTokens := r.Get("max_completion_tokens").Int()
	if maxTokens <= 0 {
		maxTokens = r.Get("max_tokens").Int()
	}
	if maxTokens > 0 {
		gc.MaxOutputTokens, set = maxTokens, true
	}
	if n := r.Get("n").Int(); n > 1 {
		if n > 8 {
			return nil, badRequest("n: Gemini returns at most 8 candidates")
		}
		if r.Get("stream").Bool() {
			return nil, badRequest("n: a streamed Gemini answer has one choice; send n above 1 without stream")
		}
		gc.CandidateCount, set = n, true
	}
	switch stop := r.Get("stop"); {
	case stop.Type == gjson.String && stop.Str != "":
		gc.StopSequences, set = []string{stop.Str}, true
	case stop.IsArray():
		stop.ForEach(func(_, s gjson.Result) bool {
			if s.Type == gjson.String && s.Str != "" {
				gc.StopSequences = append(gc.StopSequences, s.Str)
			}
			return true
		})
		set = set || gc.StopSequences != nil
	}
	if r.Get("logprobs").Bool() {
		gc.ResponseLogprobs, set = true, true
		gc.Logprobs = num("top_logprobs")
	}
	if rf := r.Get("response_format"); rf.IsObject() {
		switch rf.Get("type").String() {
		case "json_object":
			gc.ResponseMimeType = "application/json"
		case "json_schema":
			gc.ResponseMimeType = "application/json"
			if err := gc.setSchema(rf.Get("json_schema.schema")); err != nil {
				return nil, err
			}
		case "text":
			gc.ResponseMimeType = "text/plain"
		}
		if s := rf.Get("response_schema"); s.IsObject() {
			gc.ResponseMimeType = "application/json"
			if err := gc.setSchema(s); err != nil {
				return nil, err
			}
		}
		set = set || gc.ResponseMimeType != ""
	}
	tc, err := thinking(r, model)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		gc.ThinkingConfig, set = tc, true
	}
	if !set {
		return nil, nil
	}
	return &gc, nil
}

// thinking maps reasoning_effort (or Anthropic's thinking param) to a
// thinkingConfig, as LiteLLM does: a thinking budget of 1024 / 2048 / 4096
// tokens for low / medium / high (minimal: the model's least), 0 for none;
// Gemini 3 takes a thinking level instead.
func thinking(r gjson.Result, model string) (*thinkingConfig, error) {
	budget := func(n int64, include bool) *thinkingConfig {
		return &thinkingConfig{ThinkingBudget: &n, IncludeThoughts: include}
	}
	if t := r.Get("thinking"); t.IsObject() && !r.Get("reasoning_effort").Exists() {
		if t.Get("type").String() == "disabled" {
			return budget(0, false), nil
		}
		if b := t.Get("budget_tokens"); b.Type == gjson.Number {
			if b.Int() < 0 || b.Int() > 1<<20 {
				return nil, badRequest("thinking.budget_tokens must be between 0 and %d", 1<<20)
			}
			return budget(b.Int(), b.Int() > 0), nil
		}
		return nil, nil
	}
	effort := r.Get("reasoning_effort")
	if effort.Type == gjson.Null || !effort.Exists() {
		return nil, nil
	}
	e := strings.ToLower(effort.String())
	lower := strings.ToLower(model)
	if strings.Contains(lower, "gemini-3") {
		flash := strings.Contains(lower, "flash")
		level := map[string]string{"low": "low", "high": "high"}[e]
		switch e {
		case "minimal", "none", "disable":
			level = "low"
			if flash {
				level = "minimal"
			}
		case "medium":
			level = "high"
			if flash {
				level = "medium"
			}
		}
		if level == "" {
			return nil, badRequest("reasoning_effort %q is not one of minimal, low, medium, high, none", effort.String())
		}
		return &thinkingConfig{ThinkingLevel: level, IncludeThoughts: e != "none" && e != "disable"}, nil
	}
	switch e {
	case "none", "disable":
		return budget(0, false), nil
	case "minimal":
		switch {
		case strings.Contains(lower, "gemini-2.5-flash-lite"):
			return budget(512, true), nil
		case strings.Contains(lower, "gemini-2.5-pro"):
			return budget(128, true), nil
		case strings.Contains(lower, "gemini-2.5-flash"):
			return budget(1, true), nil
		}
		return budget(128, true), nil
	case "low":
		return budget(1024, true), nil
	case "medium":
		return budget(2048, true), nil
	case "high":
		return budget(4096, true), nil
	}
	return nil, badRequest("reasoning_effort %q is not one of minimal, low, medium, high, none", effort.String())
}

// tools maps tools, tool_choice and web_search_options.
func tools(req *request, r gjson.Result) error {
	var decls []functionDeclaration
	var err error
	r.Get("tools").ForEach(func(_, t gjson.Result) bool {
		if t.Get("type").String() != "function" {
			err = badRequest("tools: type %q is not supported by Gemini deployments", t.Get("type").String())
			return false
		}
		f := t.Get("function")
		d := functionDeclaration{Name: f.Get("name").String(), Description: f.Get("description").String()}
		if d.Name == "" {
			err = badRequest("tools: function.name is required")
			return false
		}
		if p := f.Get("parameters"); p.IsObject() && !emptyObject(p) {
			if d.Parameters, err = CleanSchema(p, false); err != nil {
				return false
			}
		}
		decls = append(decls, d)
		return true
	})
	if err != nil {
		return err
	}
	if len(decls) > 0 {
		req.Tools = append(req.Tools, tool{FunctionDeclarations: decls})
	}
	if r.Get("web_search_options").IsObject() {
		req.Tools = append(req.Tools, tool{GoogleSearch: json.RawMessage("{}")})
	}
	tc, err := openai.ParseToolChoice(r.Get("tool_choice"))
	if err != nil {
		return err
	}
	mode := map[string]string{"auto": "AUTO", "required": "ANY", "none": "NONE", "function": "ANY"}[tc.Mode]
	if mode != "" && len(decls) > 0 {
		req.ToolConfig = &toolConfig{}
		req.ToolConfig.FunctionCallingConfig.Mode = mode
		if tc.Name != "" {
			req.ToolConfig.FunctionCallingConfig.AllowedFunctionNames = []string{tc.Name}
		}
	}
	return nil
}

// emptyObject reports a schema of an object with no properties (a function
// without arguments), which Gemini refuses as parameters.
func emptyObject(p gjson.Result) bool {
	props := p.Get("properties")
	return p.Get("type").String() == "object" && (!props.Exists() || (props.IsObject() && len(props.Map()) == 0))
}

// setSchema makes s, cleaned for Gemini, the response schema (none when s
// is not an object).
func (gc *genConfig) setSchema(s gjson.Result) error {
	if !s.IsObject() {
		return nil
	}
	schema, err := CleanSchema(s, true)
	if err != nil {
		return err
	}
	gc.ResponseSchema = schema
	return nil
}
