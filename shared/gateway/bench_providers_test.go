package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/providers/bedrock"
	"github.com/sluice-gw/sluice/shared/wire"
)

// BenchmarkHandlerProviders is BenchmarkHandler's "fixed" case (no network,
// log=warn) for each protocol: the OpenAI passthrough, and the Anthropic and
// Bedrock translators (request translated, a fixed provider answer of the
// same size as the OpenAI one translated back, 18 content events when
// streamed). The differences are the translators' cost per request.
//
//	go test -run '^$' -bench HandlerProviders -benchmem ./shared/gateway/
func BenchmarkHandlerProviders(b *testing.B) {
	for _, prov := range []struct {
		name string
		p    interface {
			Do(context.Context, *config.Deployment, wire.Call) (*http.Response, error)
		}
	}{{"openai", fixedProvider{}}, {"anthropic", anthropicFixed{}}, {"bedrock", bedrockFixed{}}} {
		h := newHandler(b, mockConfig, prov.p, slog.LevelWarn)
		for _, mode := range benchModes {
			b.Run(mode.name+"/"+prov.name, func(b *testing.B) {
				serveLoop(b, h, mode.body, nil)
			})
		}
	}
}

var (
	anthropicMessage = []byte(`{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"Hello! This is a fixed response from the mock upstream."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":13}}`)
	anthropicSSE     = func() []byte {
		var b bytes.Buffer
		ev := func(name, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-20250514","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for i := 1; i <= 18; i++ {
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tok%d "}}`, i))
		}
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":18}}`)
		ev("message_stop", `{"type":"message_stop"}`)
		return b.Bytes()
	}()
)

// anthropicFixed translates the request and answers with a fixed Anthropic
// response, translated back.
type anthropicFixed struct{}

func (anthropicFixed) Do(_ context.Context, _ *config.Deployment, call wire.Call) (*http.Response, error) {
	if _, err := anthropic.TranslateRequest(call.Body, 4096); err != nil {
		return nil, err
	}
	if call.Stream {
		s := anthropic.NewStream(io.NopCloser(bytes.NewReader(anthropicSSE)), true, 1700000000)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: s, ContentLength: -1}, nil
	}
	out, err := anthropic.TranslateResponse(anthropicMessage, 1700000000)
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(out)), ContentLength: int64(len(out))}, nil
}

// bedrockFixed translates the request and answers with a fixed Converse
// output or event sequence, translated back.
type bedrockFixed struct{}

var converseOutput = &bedrockruntime.ConverseOutput{
	Output: &types.ConverseOutputMemberMessage{Value: types.Message{Role: types.ConversationRoleAssistant,
		Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Hello! This is a fixed response from the mock upstream."}}}},
	StopReason: types.StopReasonEndTurn,
	Usage:      &types.TokenUsage{InputTokens: aws.Int32(12), OutputTokens: aws.Int32(13), TotalTokens: aws.Int32(25)},
}

var converseEvents = func() []types.ConverseStreamOutput {
	evs := []types.ConverseStreamOutput{&types.ConverseStreamOutputMemberMessageStart{Value: types.MessageStartEvent{Role: types.ConversationRoleAssistant}}}
	for i := 1; i <= 18; i++ {
		evs = append(evs, &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{
			ContentBlockIndex: aws.Int32(0), Delta: &types.ContentBlockDeltaMemberText{Value: fmt.Sprintf("tok%d ", i)}}})
	}
	return append(evs,
		&types.ConverseStreamOutputMemberContentBlockStop{Value: types.ContentBlockStopEvent{ContentBlockIndex: aws.Int32(0)}},
		&types.ConverseStreamOutputMemberMessageStop{Value: types.MessageStopEvent{StopReason: types.StopReasonEndTurn}},
		&types.ConverseStreamOutputMemberMetadata{Value: types.ConverseStreamMetadataEvent{
			Usage: &types.TokenUsage{InputTokens: aws.Int32(12), OutputTokens: aws.Int32(18), TotalTokens: aws.Int32(30)}}})
}()

type sliceEvents struct {
	ch chan types.ConverseStreamOutput
}

func (s sliceEvents) Events() <-chan types.ConverseStreamOutput { return s.ch }
func (sliceEvents) Err() error                                  { return nil }
func (sliceEvents) Close() error                                { return nil }

func (bedrockFixed) Do(_ context.Context, _ *config.Deployment, call wire.Call) (*http.Response, error) {
	req, err := bedrock.TranslateRequest(call.Body, "anthropic.claude-3-5-haiku-20241022-v1:0")
	if err != nil {
		return nil, err
	}
	if call.Stream {
		ch := make(chan types.ConverseStreamOutput, len(converseEvents))
		for _, ev := range converseEvents {
			ch <- ev
		}
		close(ch)
		s := bedrock.NewStream(sliceEvents{ch}, *req.Input.ModelId, req.IncludeUsage, 1700000000)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: s, ContentLength: -1}, nil
	}
	out := bedrock.TranslateOutput(converseOutput, *req.Input.ModelId, 1700000000)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(out)), ContentLength: int64(len(out))}, nil
}
