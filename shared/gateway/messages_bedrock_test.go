package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/providers/bedrock/bedrocktest"
)

// The Messages API to Bedrock: Claude through InvokeModel (the body as the
// client wrote it, adapted as Bedrock requires), other models through
// Converse (translated), count_tokens through CountTokens.
func bedrockMessagesFixture(t *testing.T) (*messagesFixture, *bedrocktest.Server) {
	t.Helper()
	fake := bedrocktest.New("Bedrock")
	t.Cleanup(fake.Close)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	creds := fmt.Sprintf(`api_base: "%s", aws_region_name: us-west-2, aws_access_key_id: AKIDFAKE, aws_secret_access_key: fake`, fake.URL)
	return newMessagesFixture(t, `  - model_name: claude-bedrock
    litellm_params: {model: bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0, `+creds+`}
  - model_name: llama-bedrock
    litellm_params: {model: bedrock/meta.llama3-70b-instruct-v1:0, `+creds+`}`), fake
}

func TestMessagesBedrockInvoke(t *testing.T) {
	f, fake := bedrockMessagesFixture(t)
	c := f.client("sk-user")
	ctx := context.Background()
	m, err := c.Messages.New(ctx, userText("claude-bedrock", "hi"), option.WithHeader("anthropic-beta", "context-1m-2025-08-07, interleaved-thinking-2025-05-14"))
	if err != nil {
		t.Fatal(err)
	}
	if textOf(m) != "Hello from Bedrock." || m.Usage.CacheReadInputTokens != 8 {
		t.Errorf("message: %s", m.RawJSON())
	}
	calls := fake.Calls()
	call := calls[len(calls)-1]
	body := gjson.Parse(call.Body)
	if call.ModelID != "us.anthropic.claude-sonnet-4-5-20250929-v1:0" || call.Stream || body.Get("model").Exists() ||
		body.Get("anthropic_version").Str != "bedrock-2023-05-31" || body.Get("messages.0.content.0.text").Str != "hi" || body.Get("max_tokens").Int() != 100 ||
		body.Get("anthropic_beta").Raw != `["context-1m-2025-08-07","interleaved-thinking-2025-05-14"]` {
		t.Errorf("InvokeModel %s: %s", call.ModelID, call.Body)
	}
	comp := f.completion(t)
	if comp.Usage.PromptTokens != 32 || comp.Usage.CompletionTokens != 6 || comp.Usage.CachedTokens != 8 || comp.Usage.CacheCreationTokens != 4 {
		t.Errorf("usage %+v", comp.Usage)
	}

	// Streamed, with thinking: the chunks' events come out as Anthropic SSE,
	// the signature intact.
	p := userText("claude-bedrock", "think")
	p.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
	sm, _ := stream(t, c, p)
	if len(sm.Content) != 2 || sm.Content[0].Signature != "sig-bedrock" || textOf(sm) != "Thought it through." || sm.StopReason != "end_turn" {
		t.Errorf("streamed: %+v", sm.Content)
	}
	calls = fake.Calls()
	if call = calls[len(calls)-1]; !call.Stream || gjson.Get(call.Body, "stream").Exists() {
		t.Errorf("InvokeModelWithResponseStream: stream %v, body %s", call.Stream, call.Body)
	}
	if comp := f.completion(t); comp.Usage.PromptTokens != 32 || comp.Usage.CompletionTokens != 6 || !comp.Stream {
		t.Errorf("streamed usage %+v", comp.Usage)
	}

	n, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "claude-bedrock",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count me"))}})
	if err != nil || n.InputTokens != 42 {
		t.Errorf("count_tokens: %v %v", n, err)
	}

	// A stream broken after content ends with an Anthropic error event.
	fake.SetFault(bedrocktest.BreakAfterContent)
	s := c.Messages.NewStreaming(ctx, userText("claude-bedrock", "hi"))
	for s.Next() {
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "The model stream broke") {
		t.Errorf("broken stream: err %v", err)
	}
	var e *anthropic.Error
	s.Close()
	f.completion(t)
	// An exception before any event is a status: throttling, a 429.
	fake.SetFault(bedrocktest.ThrottleFirstFrame)
	s = c.Messages.NewStreaming(ctx, userText("claude-bedrock", "hi"))
	for s.Next() {
	}
	if err := s.Err(); !errors.As(err, &e) || e.StatusCode != 429 || gjson.Get(e.RawJSON(), "error.type").Str != "rate_limit_error" {
		t.Errorf("throttled before the stream: %v", err)
	}
}

func TestMessagesBedrockConverse(t *testing.T) {
	f, fake := bedrockMessagesFixture(t)
	c := f.client("sk-user")
	m, err := c.Messages.New(context.Background(), userText("llama-bedrock", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if textOf(m) != "Hello from Bedrock." || m.StopReason != "end_turn" || m.Usage.InputTokens != 20 || m.Usage.CacheReadInputTokens != 8 {
		t.Errorf("message: %s", m.RawJSON())
	}
	calls := fake.Calls()
	if call := calls[len(calls)-1]; call.ModelID != "meta.llama3-70b-instruct-v1:0" || !gjson.Get(call.Body, "messages.0.content.0.text").Exists() {
		t.Errorf("Converse %s: %s", call.ModelID, call.Body)
	}
	sm, types := stream(t, c, userText("llama-bedrock", "hi"))
	if textOf(sm) != "Hello from Bedrock." || sm.Usage.OutputTokens != 6 {
		t.Errorf("streamed: %+v (%v)", sm, types)
	}
}
