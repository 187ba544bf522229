package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
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
    litellm_params: {model: bedrock/meta.llama3-70b-instruct-v1:0, `+creds+`}
  - model_name: claude-nocount
    litellm_params: {model: bedrock/anthropic.claude-3-haiku-nocount-v1:0, `+creds+`}`), fake
}

// count_tokens on a Claude model Bedrock cannot count (its 400 "The
// provided model doesn't support counting tokens."), or on a request it
// cannot count (a document), is the gateway's estimate, flagged, not a 400;
// a model is learnt: its next count makes no failing call. A request
// Bedrock finds invalid stays a 400.
func TestMessagesBedrockCountUncountable(t *testing.T) {
	f, fake := bedrockMessagesFixture(t)
	count := func(model, messages string) (int, string, string) {
		t.Helper()
		resp := f.post(t, "/v1/messages/count_tokens", "sk-master", `{"model":"`+model+`","messages":`+messages+`}`)
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("X-Sluice-Token-Count"), string(body)
	}
	countCalls := func() (n int) {
		for _, c := range fake.Calls() {
			if strings.Contains(c.ModelID, "nocount") {
				n++
			}
		}
		return n
	}
	const hi = `[{"role":"user","content":"count me, please"}]`
	for i := range 2 {
		status, flag, body := count("claude-nocount", hi)
		if status != 200 || flag != "estimate" || gjson.Get(body, "input_tokens").Int() <= 0 {
			t.Fatalf("count %d: %d %q %s", i, status, flag, body)
		}
	}
	if n := countCalls(); n != 1 {
		t.Errorf("Bedrock got %d counts for the model it cannot count, want 1 (learnt)", n)
	}
	doc := `[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"a document"}}]}]`
	if status, flag, body := count("claude-bedrock", doc); status != 200 || flag != "estimate" {
		t.Errorf("a document: %d %q %s", status, flag, body)
	}
	if status, flag, body := count("claude-bedrock", hi); status != 200 || flag != "" || gjson.Get(body, "input_tokens").Int() != 42 {
		t.Errorf("a counted model after them: %d %q %s", status, flag, body)
	}
	fake.SetFault(bedrocktest.Validation)
	if status, _, body := count("claude-bedrock", hi); status != 400 {
		t.Errorf("an invalid request: %d %s", status, body)
	}
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
