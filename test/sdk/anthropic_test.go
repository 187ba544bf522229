package sdk

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/wire"
)

// fakeAnthropic is a small Anthropic Messages API: it answers a tool result
// with text, a request with tools with a tool call, an image with its
// description, anything else with a greeting; streamed or not, with the
// usage (cache reads and writes included) of Anthropic's answers.
type fakeAnthropic struct {
	mu       sync.Mutex
	requests []string
}

// The usage every answer reports: 20 uncached input tokens, 8 read from the
// cache, 4 written to it, 6 output tokens.
var fakeUsage = wire.Usage{PromptTokens: 32, CompletionTokens: 6, TotalTokens: 38, CachedTokens: 8, CacheCreationTokens: 4}

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, string(body))
	f.mu.Unlock()
	if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "sk-ant-fake" || r.Header.Get("anthropic-version") != "2023-06-01" {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		return
	}
	req := gjson.ParseBytes(body)
	msgs := req.Get("messages").Array()
	last := msgs[len(msgs)-1].Get("content").Array()
	var text, tool string
	switch {
	case last[0].Get("type").String() == "tool_result":
		text = "It is " + last[0].Get("content").String() + " in Paris."
	case req.Get("tools").Exists():
		tool = "get_weather"
	case len(last) > 1 && last[1].Get("type").String() == "image":
		text = "A " + last[1].Get("source.media_type").String() + " image of " + strconv.Itoa(len(last[1].Get("source.data").String())) + " base64 bytes."
	default:
		text = "Hello from Claude."
	}
	model := req.Get("model").String()
	usage := `"input_tokens":20,"cache_read_input_tokens":8,"cache_creation_input_tokens":4`
	stop := "end_turn"
	if tool != "" {
		stop = "tool_use"
	}
	if !req.Get("stream").Bool() {
		content := fmt.Sprintf(`{"type":"text","text":%q}`, text)
		if tool != "" {
			content = `{"type":"tool_use","id":"toolu_fake1","name":"get_weather","input":{"location":"Paris"}}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_fake","type":"message","role":"assistant","model":%q,"content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":{%s,"output_tokens":6}}`,
			model, content, stop, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(name, data string) {
		io.WriteString(w, "event: "+name+"\ndata: "+data+"\n\n")
		w.(http.Flusher).Flush()
	}
	send("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_fake","type":"message","role":"assistant","content":[],"model":%q,"stop_reason":null,"stop_sequence":null,"usage":{%s,"output_tokens":1}}}`, model, usage))
	if tool != "" {
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_fake1","name":"get_weather","input":{}}}`)
		for _, part := range []string{"", `{"locat`, `ion": "Par`, `is"}`} {
			b, _ := json.Marshal(part)
			send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+string(b)+`}}`)
		}
	} else {
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		send("ping", `{"type": "ping"}`)
		for _, word := range strings.SplitAfter(text, " ") {
			b, _ := json.Marshal(word)
			send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(b)+`}}`)
		}
	}
	send("content_block_stop", `{"type":"content_block_stop","index":0}`)
	send("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":6}}`)
	send("message_stop", `{"type":"message_stop"}`)
}

func startAnthropic(t *testing.T) (*server, *fakeAnthropic) {
	fake := &fakeAnthropic{}
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	s := startServerT(t, fmt.Sprintf(`model_list:
  - model_name: claude
    litellm_params: {model: anthropic/claude-sonnet-4-20250514, api_base: %q, api_key: sk-ant-fake}
`, up.URL))
	return s, fake
}

func claudeCost(t *testing.T) string {
	p, ok := pricing.Default().Lookup("anthropic", "claude-sonnet-4-20250514", "")
	if !ok {
		t.Fatal("claude-sonnet-4-20250514 is not in the price table")
	}
	return pricing.USD(p.CostNanos(fakeUsage))
}

func weatherTool() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("The weather in a city"),
		Parameters: openai.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"location": map[string]string{"type": "string"}},
			"required":   []string{"location"},
		},
	})}
}

func TestAnthropicSDK(t *testing.T) {
	s, fake := startAnthropic(t)

	t.Run("chat", func(t *testing.T) {
		var raw *http.Response
		client := newClient(s)
		c, err := client.Chat.Completions.New(testContext(t), chatParams("claude"), option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if c.Choices[0].Message.Content != "Hello from Claude." || c.Choices[0].FinishReason != "stop" {
			t.Fatalf("reply %s", c.RawJSON())
		}
		if c.Usage.PromptTokens != 32 || c.Usage.CompletionTokens != 6 || c.Usage.PromptTokensDetails.CachedTokens != 8 {
			t.Fatalf("usage %+v", c.Usage)
		}
		if got, want := raw.Header.Get("x-litellm-response-cost"), claudeCost(t); got != want {
			t.Fatalf("cost %s, want %s from the price table", got, want)
		}
		fake.mu.Lock()
		sent := fake.requests[len(fake.requests)-1]
		fake.mu.Unlock()
		if gjson.Get(sent, "system.0.text").String() != "You are a helpful assistant." || gjson.Get(sent, "max_tokens").Int() != 64 {
			t.Fatalf("sent %s", sent)
		}
	})

	t.Run("stream with include_usage", func(t *testing.T) {
		client := newClient(s)
		params := chatParams("claude")
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
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
		if acc.Choices[0].Message.Content != "Hello from Claude." || acc.Choices[0].FinishReason != "stop" {
			t.Fatalf("accumulated %+v", acc.Choices[0])
		}
		if acc.Usage.PromptTokens != 32 || acc.Usage.CompletionTokens != 6 || acc.Usage.TotalTokens != 38 {
			t.Fatalf("usage %+v", acc.Usage)
		}
	})

	t.Run("stream without include_usage", func(t *testing.T) {
		tp := &tap{}
		client := newClient(s, option.WithMiddleware(tp.middleware))
		stream := client.Chat.Completions.NewStreaming(testContext(t), chatParams("claude"))
		for stream.Next() {
		}
		stream.Close()
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if raw := tp.raw(); strings.Contains(raw, `"usage":{`) || !strings.HasSuffix(raw, "data: [DONE]\n\n") {
			t.Fatalf("stream %s", raw)
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
			if finish != "tool_calls" || len(msg.ToolCalls) != 1 {
				t.Fatalf("finish %s, message %+v", finish, msg)
			}
			tc := msg.ToolCalls[0]
			if tc.ID != "toolu_fake1" || tc.Function.Name != "get_weather" || gjson.Get(tc.Function.Arguments, "location").String() != "Paris" {
				t.Fatalf("tool call %+v", tc)
			}
			params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("18C", tc.ID))
			c, err := client.Chat.Completions.New(testContext(t), params)
			if err != nil {
				t.Fatal(err)
			}
			if c.Choices[0].Message.Content != "It is 18C in Paris." {
				t.Fatalf("final reply %s", c.RawJSON())
			}
			fake.mu.Lock()
			sent := fake.requests[len(fake.requests)-1]
			fake.mu.Unlock()
			if gjson.Get(sent, "messages.1.content.0.type").String() != "tool_use" || gjson.Get(sent, "messages.1.content.0.input.location").String() != "Paris" ||
				gjson.Get(sent, "messages.2.content.0.tool_use_id").String() != "toolu_fake1" {
				t.Fatalf("round trip sent %s", sent)
			}
		})
	}

	t.Run("image data URL", func(t *testing.T) {
		client := newClient(s)
		const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
		c, err := client.Chat.Completions.New(testContext(t), openai.ChatCompletionNewParams{
			Model: "claude",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("What is this?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + png}),
			})},
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("A image/png image of %d base64 bytes.", len(png)); c.Choices[0].Message.Content != want {
			t.Fatalf("reply %q, want %q", c.Choices[0].Message.Content, want)
		}
	})
}
