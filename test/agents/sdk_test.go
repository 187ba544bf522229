package agents

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// The official Go SDKs' rows: each turn as an application written against
// the SDK would run it; a tool loop offers get_weather, runs the call it
// gets (its result "sluice-tool-ran") and sends the result back.

const toolOutput = "sluice-tool-ran"

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a bound on a hang
	t.Cleanup(cancel)
	return ctx
}

func ask(tn turn) string {
	if tn == toolLoop {
		return "What is the weather in Paris? Please use the tool."
	}
	return "hi"
}

// cityWeather is the structured turns' schema.
var cityWeather = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}, "temp_c": map[string]any{"type": "number"}}, "required": []string{"city", "temp_c"}}

var weatherSchema = map[string]any{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}, "required": []string{"location"}}

func openAIChat(t *testing.T, e *env, group string, tn turn) string {
	c := openai.NewClient(option.WithBaseURL(e.url+"/v1"), option.WithAPIKey(master), option.WithMaxRetries(0))
	p := openai.ChatCompletionNewParams{Model: group, MaxTokens: openai.Int(100),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage(ask(tn))}}
	switch tn {
	case toolLoop:
		p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: weatherSchema})}
	case structured, structuredStream:
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: cityWeather}}}
	}
	var text strings.Builder
	for range 2 { // the tool call, then the answer to its result
		var msg openai.ChatCompletionMessage
		if !tn.stream() {
			r, err := c.Chat.Completions.New(ctxT(t), p)
			if err != nil {
				t.Fatal(err)
			}
			msg = r.Choices[0].Message
		} else {
			st := c.Chat.Completions.NewStreaming(ctxT(t), p)
			var acc openai.ChatCompletionAccumulator
			for st.Next() {
				acc.AddChunk(st.Current())
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Choices) == 0 {
				t.Fatal("a stream without choices")
			}
			msg = acc.Choices[0].Message
		}
		text.WriteString(msg.Content)
		if len(msg.ToolCalls) == 0 {
			break
		}
		p.Messages = append(p.Messages, msg.ToParam(), openai.ToolMessage(toolOutput, msg.ToolCalls[0].ID))
	}
	return text.String()
}

func openAIResponses(t *testing.T, e *env, group string, tn turn) string {
	c := openai.NewClient(option.WithBaseURL(e.url+"/v1"), option.WithAPIKey(master), option.WithMaxRetries(0))
	p := responses.ResponseNewParams{Model: group, Instructions: openai.String("Be brief."), Store: openai.Bool(false),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(ask(tn), responses.EasyInputMessageRoleUser)}}}
	switch tn {
	case toolLoop:
		p.Tools = []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", weatherSchema, false)}
	case structured, structuredStream:
		p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("weather", cityWeather)}
	}
	var text strings.Builder
	for range 2 {
		var out []responses.ResponseOutputItemUnion
		if !tn.stream() {
			r, err := c.Responses.New(ctxT(t), p)
			if err != nil {
				t.Fatal(err)
			}
			out = r.Output
		} else {
			st := c.Responses.NewStreaming(ctxT(t), p)
			for st.Next() {
				if ev := st.Current(); ev.Type == "response.completed" {
					out = ev.Response.Output
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
		}
		var call *responses.ResponseOutputItemUnion
		for i, it := range out {
			switch it.Type {
			case "message":
				for _, part := range it.Content {
					text.WriteString(part.Text)
				}
			case "function_call":
				call = &out[i]
			}
		}
		if call == nil {
			break
		}
		// Store is false: the whole conversation goes again, as Codex sends it.
		p.Input.OfInputItemList = append(p.Input.OfInputItemList,
			responses.ResponseInputItemParamOfFunctionCall(call.Arguments.OfString, call.CallID, call.Name),
			responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: openai.String(call.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(toolOutput)}}})
	}
	return text.String()
}

func anthropicMessages(t *testing.T, e *env, group string, tn turn) string {
	c := anthropic.NewClient(aoption.WithBaseURL(e.url), aoption.WithAPIKey(master), aoption.WithMaxRetries(0))
	p := anthropic.MessageNewParams{Model: group, MaxTokens: 100, System: []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(ask(tn)))}}
	if tn == toolLoop {
		p.Tools = []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: weatherSchema["properties"], Required: []string{"location"}}, "get_weather")}
	}
	var text strings.Builder
	for range 2 {
		var m *anthropic.Message
		if !tn.stream() {
			var err error
			if m, err = c.Messages.New(ctxT(t), p); err != nil {
				t.Fatal(err)
			}
		} else {
			st := c.Messages.NewStreaming(ctxT(t), p)
			acc := anthropic.Message{}
			for st.Next() {
				if err := acc.Accumulate(st.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			m = &acc
		}
		var toolID string
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				text.WriteString(b.Text)
			case "tool_use":
				toolID = b.ID
			}
		}
		if toolID == "" {
			break
		}
		// A system reminder between the turns, as Claude Code sends them
		// (Anthropic takes them; Bedrock's Claude only at the top).
		p.Messages = append(p.Messages, m.ToParam(), anthropic.MessageParam{OfSystem: &anthropic.SystemMessageParam{
			Content: []anthropic.TextBlockParam{{Text: "<system-reminder>stay brief</system-reminder>"}}}},
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(toolID, toolOutput, false)))
	}
	return text.String()
}
