package bedrock

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/transport/http/protocol/restjson1"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/wire"
)

var seq atomic.Uint64

func newID() string {
	return "chatcmpl-bedrock-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatUint(seq.Add(1), 36)
}

// Do sends call to d through Converse or ConverseStream. A response has
// status 200 and an OpenAI-shaped body; every Bedrock failure is an
// *apierr.Error, including an exception that arrives as the first frame of
// a stream (it becomes the status it stands for, never a 200).
func (c *Clients) Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	modelID := ModelID(d.Model)
	if d.Model == "*" || d.Model == "" {
		modelID = ModelID(jsonString(call.Body, "model"))
	}
	if call.Op == wire.OpEmbeddings || call.Op == wire.OpImages {
		cl, err := c.Client(ctx, d)
		if err != nil {
			return nil, &apierr.Error{Kind: apierr.UpstreamAuth, Message: "could not load AWS credentials for deployment " + d.ID, Cause: err}
		}
		if call.Op == wire.OpImages {
			return images(ctx, cl, d, modelID, call.Body) // images.go
		}
		return embed(ctx, cl, d, modelID, call.Body)
	}
	req, err := TranslateRequest(call.Body, modelID)
	if err != nil {
		return nil, err
	}
	cl, err := c.Client(ctx, d)
	if err != nil {
		return nil, &apierr.Error{Kind: apierr.UpstreamAuth, Message: "could not load AWS credentials for deployment " + d.ID, Cause: err}
	}
	created := time.Now().Unix()
	if !call.Stream {
		out, err := cl.Converse(ctx, &req.Input)
		if err != nil {
			return nil, Classify(d, err)
		}
		return response("application/json", io.NopCloser(bytes.NewReader(translateOutput(out, modelID, created, req.JSONMode)))), nil
	}
	out, err := cl.ConverseStream(ctx, req.StreamInput(), ownCodec)
	if err != nil {
		return nil, Classify(d, err)
	}
	es := out.GetStream()
	s := newDecoder(es, modelID, req.IncludeUsage, created)
	s.d, s.jsonMode = d, req.JSONMode
	if err := s.first(); err != nil { // an exception before any event
		es.Close()
		return nil, err
	}
	return response("text/event-stream", &s.Stream), nil
}

// ownCodec gives a stream a protocol of its own. The SDK's restJson1
// protocol decodes event streams with one decoder and one payload buffer
// per instance, and a client holds one instance: two streams of a
// deployment at once (a local gateway serves many) would decode into the
// same buffer (smithy-go v1.28.9; the race detector sees it in
// TestConcurrentStreams). The protocol's service schema argument is unused.
func ownCodec(o *bedrockruntime.Options) { o.Protocol = restjson1.New(nil) }

func response(contentType string, body io.ReadCloser) *http.Response {
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {contentType}}, Body: body, ContentLength: -1,
	}
}

// FinishReason maps a Converse stop reason to OpenAI's finish_reason.
func FinishReason(r types.StopReason) string {
	switch r {
	case types.StopReasonMaxTokens, types.StopReasonModelContextWindowExceeded:
		return "length"
	case types.StopReasonToolUse:
		return "tool_calls"
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		return "content_filter"
	default:
		return "stop"
	}
}

// TranslateOutput turns a Converse answer into an OpenAI chat completion.
func TranslateOutput(out *bedrockruntime.ConverseOutput, model string, created int64) []byte {
	return translateOutput(out, model, created, false)
}

// translateOutput is TranslateOutput; in jsonMode, an answer that is one
// json_tool_call tool use is the JSON content it stands for, with finish
// reason stop (as for Anthropic, and in LiteLLM).
func translateOutput(out *bedrockruntime.ConverseOutput, model string, created int64, jsonMode bool) []byte {
	b := wire.AppendCompletionHead(make([]byte, 0, 512), newID(), created, model)
	var text, reasoning, calls []byte
	var lastName, lastArgs string
	n := 0
	if m, ok := out.Output.(*types.ConverseOutputMemberMessage); ok {
		for _, c := range m.Value.Content {
			switch c := c.(type) {
			case *types.ContentBlockMemberText:
				text = append(text, c.Value...)
			case *types.ContentBlockMemberReasoningContent:
				if r, ok := c.Value.(*types.ReasoningContentBlockMemberReasoningText); ok && r.Value.Text != nil {
					reasoning = append(reasoning, *r.Value.Text...)
				}
			case *types.ContentBlockMemberToolUse:
				args := "{}"
				if c.Value.Input != nil {
					if j, err := c.Value.Input.MarshalSmithyDocument(); err == nil {
						args = string(j)
					}
				}
				lastName, lastArgs = deref(c.Value.Name), args
				calls = wire.AppendToolCall(calls, n, deref(c.Value.ToolUseId), lastName, args)
				n++
			}
		}
	}
	finish := FinishReason(out.StopReason)
	if jsonMode && n == 1 && lastName == anthropic.JSONToolName {
		text, calls, n = []byte(lastArgs), nil, 0
		if finish == "tool_calls" { // a cut answer stays "length"
			finish = "stop"
		}
	}
	b = wire.AppendMessageEnd(b, text, reasoning, nil, calls, n, finish)
	in, outTokens, read, write := usage(out.Usage)
	b = wire.AppendUsage(b, in, outTokens, read, write)
	return append(b, '}')
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func i32(p *int32) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

// usage reads Converse's token counts as wire.AppendUsage takes them:
// Converse's inputTokens exclude cache reads and writes; OpenAI's
// prompt_tokens include them, reads as cached_tokens.
func usage(u *types.TokenUsage) (in, out, read, write int64) {
	if u != nil {
		in, out, read, write = i32(u.InputTokens), i32(u.OutputTokens), i32(u.CacheReadInputTokens), i32(u.CacheWriteInputTokens)
	}
	return in, out, read, write
}

func jsonString(body []byte, key string) string {
	return gjson.GetBytes(body, key).String()
}
