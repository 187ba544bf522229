package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/wire"
)

// The Messages API through the official Anthropic Go SDK, against the
// gateway's handler over HTTP, in front of a fake Anthropic API (pass
// through), the mock (translated to chat) and keys with limits.

const claudeModel = "claude-sonnet-4-5-20250929"

type messagesFixture struct {
	*fixture
	h      *Handler
	claude *fakeClaude
	done   chan *Completion
}

func newMessagesFixture(t *testing.T, extra string) *messagesFixture {
	t.Helper()
	claude := newFakeClaude(t)
	cfg := loadConfig(t, `model_list:
  - model_name: `+claudeModel+`
    litellm_params: {model: anthropic/`+claudeModel+`, api_base: `+claude.url+`, api_key: sk-ant-fake}
  - model_name: claude-alias
    litellm_params: {model: anthropic/`+claudeModel+`, api_base: `+claude.url+`, api_key: sk-ant-fake}
  - model_name: gpt
    litellm_params: {model: mock/gpt-4o}
  - model_name: secret
    litellm_params: {model: mock/secret}
`+strings.ReplaceAll(extra, "CLAUDE_URL", claude.url)+`
general_settings: {master_key: sk-master}
`)
	cfg.ResolvePrices(pricing.Default())
	ks := keys.NewMemory()
	ctx := context.Background()
	for _, k := range []keys.Key{
		{Hash: keys.HashSecret("sk-user"), Settings: keys.Settings{Models: []string{claudeModel, "claude-alias", "gpt", "gpt-tools", "claude-bedrock", "llama-bedrock"}}},
		{Hash: keys.HashSecret("sk-one-rpm"), Settings: keys.Settings{RPMLimit: 1}},
	} {
		if err := ks.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	f := &messagesFixture{claude: claude, done: make(chan *Completion, 16)}
	f.h = testHandler(Options{Config: cfg, Keys: ks, Limits: limits.NewMemory(), Prices: pricing.Default(),
		OnComplete: func(_ context.Context, c *Completion) { f.done <- c }})
	f.fixture = serve(t, f.h)
	return f
}

// completion is the next request's Completion.
func (f *messagesFixture) completion(t *testing.T) *Completion {
	t.Helper()
	select {
	case c := <-f.done:
		return c
	case <-time.After(10 * time.Second): // a bound on a hang, not a timing assertion
		t.Fatal("OnComplete was not called")
		return nil
	}
}

func (f *messagesFixture) client(key string) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(f.srv.URL), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func userText(model, text string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: model, MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}}
}

func textOf(m *anthropic.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// stream runs a streamed request to its end and returns the message the
// SDK accumulated from its events.
func stream(t *testing.T, c anthropic.Client, p anthropic.MessageNewParams) (*anthropic.Message, []string) {
	t.Helper()
	s := c.Messages.NewStreaming(context.Background(), p)
	defer s.Close()
	var m anthropic.Message
	var types []string
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		if err := m.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.Type, err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return &m, types
}

// wantSpend checks a Messages request's Completion: Anthropic's usage with
// its cache reads and writes, priced at the model's price.
func wantSpend(t *testing.T, c *Completion, stream bool) {
	t.Helper()
	want := wire.Usage{PromptTokens: 32, CompletionTokens: 6, TotalTokens: 38, CachedTokens: 8, CacheCreationTokens: 4}
	if c.Operation != wire.OpMessages || c.Stream != stream || c.Err != nil || c.StatusCode != 200 {
		t.Errorf("completion: op %v stream %v err %v status %d", c.Operation, c.Stream, c.Err, c.StatusCode)
	}
	if c.Usage != want || c.UsageEstimated {
		t.Errorf("usage %+v (estimated %v), want %+v", c.Usage, c.UsageEstimated, want)
	}
	p, ok := pricing.Default().Get(claudeModel)
	if !ok {
		t.Fatal("no price for " + claudeModel)
	}
	if cost := p.CostNanos(want); !c.CostKnown || c.CostNanos != cost || cost == 0 {
		t.Errorf("cost %d (known %v), want %d", c.CostNanos, c.CostKnown, cost)
	}
	// The spend event: LiteLLM's call type, the cache reads, the cost.
	ev := c.SpendEvent()
	if ev.CallType != "anthropic_messages" || ev.PromptTokens != 32 || ev.CachedTokens != 8 || ev.Cost != c.CostNanos || ev.Stream != stream {
		t.Errorf("spend event: %+v", ev)
	}
}

func TestMessagesSDKPlainAndStreamed(t *testing.T) {
	f := newMessagesFixture(t, "")
	c := f.client("sk-user")
	m, err := c.Messages.New(context.Background(), userText(claudeModel, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if textOf(m) != "Hello from Claude." || m.StopReason != "end_turn" || m.Usage.CacheReadInputTokens != 8 || m.Usage.InputTokens != 20 {
		t.Errorf("message: %s", m.RawJSON())
	}
	wantSpend(t, f.completion(t), false)

	sm, types := stream(t, c, userText(claudeModel, "hi"))
	if textOf(sm) != "Hello from Claude." || sm.StopReason != "end_turn" || sm.Usage.OutputTokens != 6 {
		t.Errorf("streamed message: %+v", sm)
	}
	// (The SDK skips ping events.)
	if strings.Join(types, " ") != "message_start content_block_start content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop" {
		t.Errorf("events: %v", types)
	}
	wantSpend(t, f.completion(t), true)
}

// The pass-through body reaches Anthropic byte for byte but for the model
// (odd spacing, unknown fields, cache_control, metadata kept), with the
// client's anthropic-version and anthropic-beta headers; ?beta=true as
// Claude Code sends it is the same route.
func TestMessagesPassThroughBytes(t *testing.T) {
	f := newMessagesFixture(t, "")
	body := `{ "model" : "claude-alias",  "max_tokens":64,"metadata":{"user_id":"u-1"},` +
		`"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"hi \u00e9"}]}],"future_field":{"x":[1,2.50]}}`
	const beta = "interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"
	resp := f.send(t, http.MethodPost, "/v1/messages?beta=true", strings.NewReader(body), "X-Api-Key", "sk-user", "Anthropic-Version", "2023-06-01", "Anthropic-Beta", beta)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	got := f.claude.last(t)
	want := strings.Replace(body, `"claude-alias"`, `"`+claudeModel+`"`, 1)
	if got.body != want {
		t.Errorf("upstream body\n%s\nwant\n%s", got.body, want)
	}
	if got.path != "/v1/messages" || got.header.Get("Anthropic-Beta") != beta || got.header.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("upstream %s headers %v", got.path, got.header)
	}
	if got.header.Get("X-Api-Key") != "sk-ant-fake" {
		t.Errorf("upstream key %q, want the deployment's", got.header.Get("X-Api-Key"))
	}
	if gjson.Get(out, "content.0.text").Str != "Hello from Claude." {
		t.Errorf("answer: %s", out)
	}
}

// A tool round trip, streamed: the tool use's input arrives as
// input_json_delta fragments and accumulates to the object.
func TestMessagesSDKToolsRoundTrip(t *testing.T) {
	f := newMessagesFixture(t, "")
	c := f.client("sk-user")
	for _, model := range []string{claudeModel, "gpt-tools"} {
		t.Run(model, func(t *testing.T) {
			if model == "gpt-tools" {
				f = newMessagesFixture(t, toolsChatDeployment(t))
				c = f.client("sk-user")
			}
			p := userText(model, "weather in Paris?")
			p.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
				InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"location": map[string]any{"type": "string"}}}}}}
			m, _ := stream(t, c, p)
			if m.StopReason != "tool_use" || len(m.Content) != 1 || m.Content[0].Type != "tool_use" || m.Content[0].Name != "get_weather" {
				t.Fatalf("tool use: %+v", m.Content)
			}
			if loc := gjson.GetBytes(m.Content[0].Input, "location").Str; loc != "Paris" {
				t.Fatalf("tool input %s", m.Content[0].Input)
			}
			p.Messages = append(p.Messages, m.ToParam(),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(m.Content[0].ID, "sunny", false)))
			m2, err := c.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if textOf(m2) != "It is sunny in Paris." {
				t.Errorf("after the tool result: %s", m2.RawJSON())
			}
		})
	}
}

// A thinking block and its signature pass through, both ways.
func TestMessagesSDKThinking(t *testing.T) {
	f := newMessagesFixture(t, "")
	c := f.client("sk-user")
	p := userText(claudeModel, "think")
	p.MaxTokens = 2048
	p.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
	m, types := stream(t, c, p)
	if len(m.Content) != 2 || m.Content[0].Type != "thinking" || m.Content[0].Signature != "sig-xyz" || m.Content[0].Thinking != "Let me think." {
		t.Fatalf("thinking block: %+v (events %v)", m.Content, types)
	}
	p.Messages = append(p.Messages, m.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("and?")))
	if _, err := c.Messages.New(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got := f.claude.last(t).body; gjson.Get(got, "messages.1.content.0.signature").Str != "sig-xyz" {
		t.Errorf("the signature did not reach Anthropic: %s", got)
	}
}

func TestMessagesSDKCountTokens(t *testing.T) {
	f := newMessagesFixture(t, "")
	c := f.client("sk-user")
	params := anthropic.MessageCountTokensParams{Model: "claude-alias",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count me"))}}
	n, err := c.Messages.CountTokens(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	got := f.claude.last(t)
	if n.InputTokens != 42 || got.path != "/v1/messages/count_tokens" || gjson.Get(got.body, "model").Str != claudeModel {
		t.Errorf("count %d; upstream %s %s", n.InputTokens, got.path, got.body)
	}
	// A deployment that cannot count: the gateway's estimate, flagged.
	var raw *http.Response
	params.Model = "gpt"
	n, err = c.Messages.CountTokens(context.Background(), params, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if n.InputTokens <= 0 || raw.Header.Get("X-Sluice-Token-Count") != "estimate" {
		t.Errorf("estimate %d, header %q", n.InputTokens, raw.Header.Get("X-Sluice-Token-Count"))
	}
	if len(f.done) != 0 {
		t.Error("count_tokens reported a completion (it is not billed)")
	}
}

// Errors reach the SDK in Anthropic's shape, with Anthropic's statuses.
func TestMessagesSDKErrors(t *testing.T) {
	f := newMessagesFixture(t, `  - model_name: busy
    litellm_params: {model: anthropic/overloaded, api_base: CLAUDE_URL, api_key: sk-ant-fake}`)
	tests := []struct {
		name, key, model string
		status           int
		typ              string
	}{
		{"wrong key", "sk-nobody", "gpt", 401, "authentication_error"},
		{"model not allowed", "sk-user", "secret", 403, "permission_error"},
		{"unknown model", "sk-user", "claude-nope", 404, "not_found_error"},
		{"first request", "sk-one-rpm", "gpt", 200, ""},
		{"over the key's rpm", "sk-one-rpm", "gpt", 429, "rate_limit_error"},
		{"overloaded upstream", "sk-master", "busy", 529, "overloaded_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.client(tt.key)
			_, err := c.Messages.New(context.Background(), userText(tt.model, "hi"))
			if tt.status == 200 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *anthropic.Error
			if !errors.As(err, &e) {
				t.Fatalf("err %v (%T), want *anthropic.Error", err, err)
			}
			if e.StatusCode != tt.status || gjson.Get(e.RawJSON(), "type").Str != "error" || gjson.Get(e.RawJSON(), "error.type").Str != tt.typ {
				t.Errorf("%d %s, want %d %s", e.StatusCode, e.RawJSON(), tt.status, tt.typ)
			}
			if tt.status == 429 && e.Response.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		})
	}
}

// Model names as Claude Code sends them resolve through wildcards and
// aliases: the provider gets the name the client sent (a wildcard) or the
// group's model (an alias).
func TestMessagesModelNames(t *testing.T) {
	f := newMessagesFixture(t, `  - model_name: claude-*
    litellm_params: {model: anthropic/*, api_base: CLAUDE_URL, api_key: sk-ant-fake}
router_settings:
  model_group_alias: {claude-3-5-haiku-20241022: claude-alias}`)
	c := f.client("sk-master")
	for model, upstream := range map[string]string{
		"claude-haiku-4-5-20251001": "claude-haiku-4-5-20251001",
		"claude-3-5-haiku-20241022": claudeModel,
	} {
		if _, err := c.Messages.New(context.Background(), userText(model, "hi")); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if got := gjson.Get(f.claude.last(t).body, "model").Str; got != upstream {
			t.Errorf("%s reached Anthropic as %s, want %s", model, got, upstream)
		}
	}
}
