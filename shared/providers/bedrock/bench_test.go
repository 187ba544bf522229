package bedrock_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/sluice-gw/sluice/shared/providers/bedrock"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
)

func BenchmarkTranslateRequest(b *testing.B) {
	providerstest.BenchTranslateRequest(b, "claude", func(body []byte) (*bedrock.Request, error) { return bedrock.TranslateRequest(body, modelID) })
}

func BenchmarkTranslateOutput(b *testing.B) {
	out := &bedrockruntime.ConverseOutput{
		Output: &types.ConverseOutputMemberMessage{Value: types.Message{Role: types.ConversationRoleAssistant,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Hello! This is a fixed response from the mock upstream."}}}},
		StopReason: types.StopReasonEndTurn,
		Usage:      &types.TokenUsage{InputTokens: aws.Int32(12), OutputTokens: aws.Int32(13), TotalTokens: aws.Int32(25)},
	}
	b.ReportAllocs()
	for b.Loop() {
		bedrock.TranslateOutput(out, modelID, 1)
	}
}

type evSource struct {
	ch chan types.ConverseStreamOutput
}

func (e evSource) Events() <-chan types.ConverseStreamOutput { return e.ch }
func (evSource) Err() error                                  { return nil }
func (evSource) Close() error                                { return nil }

// BenchmarkStream: 18 text deltas, stop, usage.
func BenchmarkStream(b *testing.B) {
	evs := []types.ConverseStreamOutput{&types.ConverseStreamOutputMemberMessageStart{Value: types.MessageStartEvent{Role: types.ConversationRoleAssistant}}}
	for i := 1; i <= 18; i++ {
		evs = append(evs, &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{
			ContentBlockIndex: aws.Int32(0), Delta: &types.ContentBlockDeltaMemberText{Value: fmt.Sprintf("tok%d ", i)}}})
	}
	evs = append(evs, &types.ConverseStreamOutputMemberMessageStop{Value: types.MessageStopEvent{StopReason: types.StopReasonEndTurn}},
		&types.ConverseStreamOutputMemberMetadata{Value: types.ConverseStreamMetadataEvent{Usage: &types.TokenUsage{InputTokens: aws.Int32(12), OutputTokens: aws.Int32(18)}}})
	ch := make(chan types.ConverseStreamOutput, len(evs))
	b.ReportAllocs()
	for b.Loop() {
		for _, ev := range evs {
			ch <- ev
		}
		s := bedrock.NewStream(evSource{ch}, modelID, true, 1)
		if _, err := io.Copy(io.Discard, s); err != nil { // ends at [DONE], after the usage
			b.Fatal(err)
		}
	}
}
