package sdk

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/providers/bedrock/bedrocktest"
	"github.com/sluice-gw/sluice/shared/wire"
)

const bedrockModel = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"

// The OpenAI SDK through the gateway to a fake Bedrock runtime (SigV4
// requests, eventstream answers).
func TestBedrockSDK(t *testing.T) {
	fake := bedrocktest.New("bedrock")
	t.Cleanup(fake.Close)
	s := startServerT(t, fmt.Sprintf(`model_list:
  - model_name: claude
    litellm_params: {model: bedrock/converse/%s, api_base: %q, aws_region_name: us-west-2, aws_access_key_id: AKIDFAKE, aws_secret_access_key: fake-secret}
  - model_name: titan
    litellm_params: {model: bedrock/amazon.titan-embed-text-v2:0, api_base: %[2]q, aws_region_name: us-west-2, aws_access_key_id: AKIDFAKE, aws_secret_access_key: fake-secret}
`, bedrockModel, fake.URL))
	u := bedrocktest.Usage
	usage := wire.Usage{PromptTokens: int64(u.Input + u.CacheRead + u.CacheWrite), CompletionTokens: int64(u.Output),
		TotalTokens: int64(u.Input + u.CacheRead + u.CacheWrite + u.Output), CachedTokens: int64(u.CacheRead), CacheCreationTokens: int64(u.CacheWrite)}

	t.Run("chat", func(t *testing.T) {
		var raw *http.Response
		client := newClient(s)
		c, err := client.Chat.Completions.New(testContext(t), chatParams("claude"), option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if c.Choices[0].Message.Content != "Hello from bedrock." || c.Usage.PromptTokens != usage.PromptTokens || c.Usage.PromptTokensDetails.CachedTokens != usage.CachedTokens {
			t.Fatalf("reply %s", c.RawJSON())
		}
		p, ok := pricing.Default().Lookup("bedrock", bedrockModel, "")
		if !ok {
			t.Fatal("no price for the profile")
		}
		if got, want := raw.Header.Get("x-litellm-response-cost"), pricing.USD(p.CostNanos(usage)); got != want {
			t.Fatalf("cost %s, want %s", got, want)
		}
		calls := fake.Calls()
		if c := calls[len(calls)-1]; c.ModelID != bedrockModel || !strings.Contains(c.Auth, "us-west-2/bedrock") ||
			gjson.Get(c.Body, "inferenceConfig.maxTokens").Int() != 64 || gjson.Get(c.Body, "system.0.text").String() != "You are a helpful assistant." {
			t.Fatalf("call %+v", c)
		}
	})

	t.Run("stream with include_usage", func(t *testing.T) {
		params := chatParams("claude")
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		client := newClient(s)
		stream := client.Chat.Completions.NewStreaming(testContext(t), params)
		defer stream.Close()
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			if !acc.AddChunk(stream.Current()) {
				t.Fatalf("chunk not accepted: %s", stream.Current().RawJSON())
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if acc.Choices[0].Message.Content != "Hello from bedrock." || acc.Choices[0].FinishReason != "stop" || acc.Usage.TotalTokens != usage.TotalTokens {
			t.Fatalf("accumulated %+v usage %+v", acc.Choices[0], acc.Usage)
		}
	})

	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("tool call round trip/stream=%v", streamed), func(t *testing.T) {
			client := newClient(s)
			params := openai.ChatCompletionNewParams{
				Model:    "claude",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
				Tools:    weatherTool(),
			}
			var msg openai.ChatCompletionMessage
			var finish string
			if streamed {
				stream := client.Chat.Completions.NewStreaming(testContext(t), params)
				var acc openai.ChatCompletionAccumulator
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				stream.Close()
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				msg, finish = acc.Choices[0].Message, acc.Choices[0].FinishReason
			} else {
				c, err := client.Chat.Completions.New(testContext(t), params)
				if err != nil {
					t.Fatal(err)
				}
				msg, finish = c.Choices[0].Message, c.Choices[0].FinishReason
			}
			if finish != "tool_calls" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather" ||
				gjson.Get(msg.ToolCalls[0].Function.Arguments, "location").String() != "Paris" {
				t.Fatalf("finish %s, message %+v", finish, msg)
			}
			params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("18C", msg.ToolCalls[0].ID))
			c, err := client.Chat.Completions.New(testContext(t), params)
			if err != nil {
				t.Fatal(err)
			}
			if c.Choices[0].Message.Content != "It is 18C in Paris." {
				t.Fatalf("final reply %s", c.RawJSON())
			}
		})
	}

	t.Run("embeddings", func(t *testing.T) {
		var raw *http.Response
		client := newClient(s)
		e, err := client.Embeddings.New(testContext(t), openai.EmbeddingNewParams{
			Model:      "titan",
			Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello world", "hi"}},
			Dimensions: openai.Int(3),
		}, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Data) != 2 || len(e.Data[0].Embedding) != 3 || e.Data[1].Index != 1 || e.Usage.PromptTokens != 3 {
			t.Fatalf("embeddings %s", e.RawJSON())
		}
		p, ok := pricing.Default().Lookup("bedrock", "amazon.titan-embed-text-v2:0", "")
		if !ok {
			t.Fatal("no price for titan v2")
		}
		if got, want := raw.Header.Get("x-litellm-response-cost"), pricing.USD(p.CostNanos(wire.Usage{PromptTokens: 3, TotalTokens: 3})); got != want {
			t.Fatalf("cost %s, want %s", got, want)
		}
	})

	t.Run("image data URL", func(t *testing.T) {
		const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
		msg := openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is this?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + png}),
		})
		client := newClient(s)
		c, err := client.Chat.Completions.New(testContext(t), openai.ChatCompletionNewParams{Model: "claude", Messages: []openai.ChatCompletionMessageParamUnion{msg}})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("A png image of %d base64 bytes.", len(png)); c.Choices[0].Message.Content != want {
			t.Fatalf("reply %q, want %q", c.Choices[0].Message.Content, want)
		}
	})
}
