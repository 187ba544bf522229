package bedrock

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/providers/openai"
)

func badRequest(format string, args ...any) error {
	return apierr.New(apierr.InvalidRequest, format, args...)
}

// Request is a translated chat request: the Converse input (its stream
// twin is built from the same fields) and what the answer needs.
type Request struct {
	Input        bedrockruntime.ConverseInput
	Stream       bool
	IncludeUsage bool
	// JSONMode: response_format became the json_tool_call tool (as for
	// Anthropic, and in LiteLLM), whose input is the answer's content.
	JSONMode bool
}

// StreamInput is r's input for ConverseStream.
func (r *Request) StreamInput() *bedrockruntime.ConverseStreamInput {
	in := &r.Input
	return &bedrockruntime.ConverseStreamInput{
		ModelId: in.ModelId, Messages: in.Messages, System: in.System, InferenceConfig: in.InferenceConfig,
		ToolConfig: in.ToolConfig, AdditionalModelRequestFields: in.AdditionalModelRequestFields,
	}
}

// TranslateRequest turns an OpenAI chat completions body into a Converse
// request for modelID (the deployment's; the body's model is the gateway's
// name for it). Images must be data URLs: the gateway never fetches a URL.
func TranslateRequest(body []byte, modelID string) (*Request, error) {
	if !gjson.ValidBytes(body) {
		return nil, badRequest("the request body is not valid JSON")
	}
	r := gjson.ParseBytes(body)
	out := &Request{Stream: r.Get("stream").Bool(), IncludeUsage: r.Get("stream_options.include_usage").Bool()}
	in := &out.Input
	in.ModelId = aws.String(modelID)
	var err error
	r.Get("messages").ForEach(func(_, m gjson.Result) bool {
		role := m.Get("role").String()
		content := m.Get("content")
		var blocks []types.ContentBlock
		switch role {
		case "system", "developer":
			if blocks, err = contentBlocks(content, false); err == nil {
				for _, b := range blocks {
					in.System = append(in.System, &types.SystemContentBlockMemberText{Value: b.(*types.ContentBlockMemberText).Value})
				}
			}
		case "user":
			if blocks, err = contentBlocks(content, true); err == nil {
				in.Messages = add(in.Messages, types.ConversationRoleUser, blocks)
			}
		case "assistant":
			if blocks, err = contentBlocks(content, false); err != nil {
				return false
			}
			m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
				var args document.Interface
				if args, err = jsonDocument(tc.Get("function.arguments").String()); err != nil {
					err = badRequest("messages: tool call arguments: %v", err)
					return false
				}
				blocks = append(blocks, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
					ToolUseId: aws.String(tc.Get("id").String()),
					Name:      aws.String(tc.Get("function.name").String()),
					Input:     args,
				}})
				return true
			})
			if err != nil {
				return false
			}
			in.Messages = add(in.Messages, types.ConversationRoleAssistant, blocks)
		case "tool":
			var rc []types.ToolResultContentBlock
			if content.IsArray() {
				content.ForEach(func(_, p gjson.Result) bool {
					rc = append(rc, &types.ToolResultContentBlockMemberText{Value: p.Get("text").String()})
					return true
				})
			} else {
				rc = []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: content.String()}}
			}
			in.Messages = add(in.Messages, types.ConversationRoleUser, []types.ContentBlock{&types.ContentBlockMemberToolResult{
				Value: types.ToolResultBlock{ToolUseId: aws.String(m.Get("tool_call_id").String()), Content: rc}}})
		default:
			err = badRequest("messages: role %q is not supported by Bedrock deployments", role)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}

	ic := &types.InferenceConfiguration{}
	set := false
	maxTokens := r.Get("max_completion_tokens").Int()
	if maxTokens <= 0 {
		maxTokens = r.Get("max_tokens").Int()
	}
	if maxTokens > 0 {
		ic.MaxTokens, set = aws.Int32(int32(min(maxTokens, math.MaxInt32))), true
	}
	if v := r.Get("temperature"); v.Type == gjson.Number {
		ic.Temperature, set = aws.Float32(float32(v.Num)), true
	}
	if v := r.Get("top_p"); v.Type == gjson.Number {
		ic.TopP, set = aws.Float32(float32(v.Num)), true
	}
	switch stop := r.Get("stop"); {
	case stop.Type == gjson.String:
		ic.StopSequences, set = []string{stop.Str}, true
	case stop.IsArray():
		for _, s := range stop.Array() {
			ic.StopSequences, set = append(ic.StopSequences, s.String()), true
		}
	}
	if set {
		in.InferenceConfig = ic
	}

	var extra map[string]any
	var budget int64
	if th := r.Get("thinking"); th.IsObject() {
		v, err := jsonObject(th.Raw)
		if err != nil {
			return nil, badRequest("thinking: %v", err)
		}
		extra = map[string]any{"thinking": v}
		budget = th.Get("budget_tokens").Int()
	} else {
		budget = map[string]int64{"minimal": 1024, "low": 1024, "medium": 2048, "high": 4096}[r.Get("reasoning_effort").String()]
		if budget > 0 {
			extra = map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": budget}}
		}
	}
	if budget > math.MaxInt32-4096 {
		return nil, badRequest("thinking.budget_tokens must be at most %d", math.MaxInt32-4096)
	}
	if budget > 0 && ic.MaxTokens != nil && int64(*ic.MaxTokens) <= budget { // Bedrock wants max tokens above the budget
		ic.MaxTokens = aws.Int32(int32(budget + 4096))
	}
	if v := r.Get("top_k"); v.Type == gjson.Number {
		if extra == nil {
			extra = map[string]any{}
		}
		extra["top_k"] = v.Int()
	}
	if extra != nil {
		in.AdditionalModelRequestFields = document.NewLazyDocument(extra)
	}

	var tools []types.Tool
	r.Get("tools").ForEach(func(_, t gjson.Result) bool {
		f := t.Get("function")
		spec := types.ToolSpecification{Name: aws.String(f.Get("name").String())}
		if d := f.Get("description"); d.Type == gjson.String && d.Str != "" {
			spec.Description = aws.String(d.Str)
		}
		params := f.Get("parameters").Raw
		if params == "" {
			params = `{"type":"object","properties":{}}`
		}
		schema, derr := jsonDocument(params)
		if derr != nil {
			err = badRequest("tools: parameters: %v", derr)
			return false
		}
		spec.InputSchema = &types.ToolInputSchemaMemberJson{Value: schema}
		tools = append(tools, &types.ToolMemberToolSpec{Value: spec})
		return true
	})
	if err != nil {
		return nil, err
	}
	jsonSchema, err := anthropic.ResponseFormatSchema(r.Get("response_format"))
	if err != nil {
		return nil, err
	}
	if jsonSchema != nil {
		schema, derr := jsonDocument(string(jsonSchema))
		if derr != nil {
			return nil, badRequest("response_format: %v", derr)
		}
		tools = append(tools, &types.ToolMemberToolSpec{Value: types.ToolSpecification{Name: aws.String(anthropic.JSONToolName),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}})
		out.JSONMode = true
	}
	if len(tools) > 0 {
		tc := &types.ToolConfiguration{Tools: tools}
		choice, err := openai.ParseToolChoice(r.Get("tool_choice"))
		if err != nil {
			return nil, err
		}
		switch {
		case out.JSONMode && budget == 0: // forced, unless thinking (which refuses a forced tool)
			tc.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(anthropic.JSONToolName)}}
		case choice.Mode == "auto", choice.Mode == "none": // Converse has no "none": the model may still call
			tc.ToolChoice = &types.ToolChoiceMemberAuto{}
		case choice.Mode == "required":
			tc.ToolChoice = &types.ToolChoiceMemberAny{}
		case choice.Mode == "function":
			tc.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(choice.Name)}}
		}
		in.ToolConfig = tc
	}
	return out, nil
}

// add appends blocks to the conversation, merging consecutive turns of one
// role (Converse wants them to alternate; tool results are user turns).
func add(msgs []types.Message, role types.ConversationRole, blocks []types.ContentBlock) []types.Message {
	if len(blocks) == 0 {
		return msgs
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == role {
		msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
		return msgs
	}
	return append(msgs, types.Message{Role: role, Content: blocks})
}

// jsonDocument is a JSON text as a Smithy document; anything but an object
// becomes {} (tool arguments and schemas are objects). Numbers stay as
// written: a float64 would round an id above 2^53 and refuse 1e400.
func jsonDocument(raw string) (document.Interface, error) {
	v, err := jsonObject(raw)
	if err != nil {
		return nil, err
	}
	return document.NewLazyDocument(v), nil
}

// errEmptyName: Smithy documents cannot carry a member named "" (the SDK
// would fail to send the request, which is no fault of the deployment).
var errEmptyName = errors.New("an object member with an empty name cannot be sent to Bedrock")

// jsonObject decodes a JSON object for a document, numbers as written; {}
// for anything else.
func jsonObject(raw string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil || v == nil || dec.More() {
		return map[string]any{}, nil
	}
	if _, err := exactNumbers(v); err != nil {
		return nil, err
	}
	return v, nil
}

// exactNumbers replaces the json.Numbers of a decoded value, in place, by
// Smithy document numbers, which the document encoder writes as they are.
func exactNumbers(v any) (any, error) {
	var err error
	switch v := v.(type) {
	case json.Number:
		return smithydocument.Number(v), nil
	case map[string]any:
		for k, x := range v {
			if k == "" {
				return nil, errEmptyName
			}
			if v[k], err = exactNumbers(x); err != nil {
				return nil, err
			}
		}
	case []any:
		for i, x := range v {
			if v[i], err = exactNumbers(x); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

func contentBlocks(content gjson.Result, images bool) ([]types.ContentBlock, error) {
	if content.Type == gjson.String {
		if content.Str == "" {
			return nil, nil
		}
		return []types.ContentBlock{&types.ContentBlockMemberText{Value: content.Str}}, nil
	}
	if !content.IsArray() {
		return nil, nil
	}
	var out []types.ContentBlock
	var err error
	content.ForEach(func(_, p gjson.Result) bool {
		switch typ := p.Get("type").String(); typ {
		case "text":
			if t := p.Get("text").String(); t != "" {
				out = append(out, &types.ContentBlockMemberText{Value: t})
			}
		case "image_url":
			var url string
			if url, err = openai.ImageURL(p, images); err != nil {
				return false
			}
			var b types.ContentBlock
			if b, err = image(url); err != nil {
				return false
			}
			out = append(out, b)
		default:
			err = badRequest("content part type %q is not supported by Bedrock deployments", typ)
			return false
		}
		return true
	})
	return out, err
}

func image(url string) (types.ContentBlock, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return nil, badRequest("image_url: Bedrock deployments take images as data URLs (data:image/png;base64,...); the gateway does not fetch URLs")
	}
	meta, data, ok := strings.Cut(rest, ",")
	media, isB64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isB64 {
		return nil, badRequest("image_url: a data URL must be data:image/<type>;base64,<data>")
	}
	var f types.ImageFormat
	switch media {
	case "image/png":
		f = types.ImageFormatPng
	case "image/jpeg", "image/jpg":
		f = types.ImageFormatJpeg
	case "image/gif":
		f = types.ImageFormatGif
	case "image/webp":
		f = types.ImageFormatWebp
	default:
		return nil, badRequest("image_url: %q is not an image type Bedrock takes (png, jpeg, gif, webp)", media)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, badRequest("image_url: the data URL is not valid base64")
	}
	return &types.ContentBlockMemberImage{Value: types.ImageBlock{Format: f, Source: &types.ImageSourceMemberBytes{Value: raw}}}, nil
}
