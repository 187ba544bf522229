package bedrock

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/chunks"
	"github.com/sluice-gw/sluice/shared/providers/messages"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Anthropic's Messages API inbound for Claude on Bedrock: the client's body
// goes through InvokeModel / InvokeModelWithResponseStream, as Bedrock
// documents for Claude (its "model" and "stream" removed, Bedrock's
// anthropic_version added, the anthropic-beta header as anthropic_beta),
// so every feature the client uses survives; the stream's chunk payloads
// are Anthropic's events, re-emitted as SSE. count_tokens goes to Bedrock's
// CountTokens. Other Bedrock models take the translated chat path
// (Converse).

// BedrockAnthropicVersion is the anthropic_version Bedrock's Claude wants.
const BedrockAnthropicVersion = "bedrock-2023-05-31"

// NativeMessages reports whether d serves an Anthropic model (by its model
// id, or, for a wildcard deployment, the model the call names) through
// InvokeModel.
// A bedrock/converse/ deployment asks for Converse: the translated path.
func (*Clients) NativeMessages(d *config.Deployment, call wire.Call) bool {
	return !strings.HasPrefix(d.Model, "converse/") && strings.Contains(modelIDOf(d, call), "anthropic.")
}

func modelIDOf(d *config.Deployment, call wire.Call) string {
	if d.Model == "*" || d.Model == "" {
		return ModelID(jsonString(call.Body, "model"))
	}
	return ModelID(d.Model)
}

// Messages sends a Messages or count_tokens call to d.
func (c *Clients) Messages(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	modelID := modelIDOf(d, call)
	body, err := invokeBody(call)
	if err != nil {
		return nil, err
	}
	cl, err := c.Client(ctx, d)
	if err != nil {
		return nil, &apierr.Error{Kind: apierr.UpstreamAuth, Message: "could not load AWS credentials for deployment " + d.ID, Cause: err}
	}
	switch {
	case call.Op == wire.OpCountTokens:
		if _, no := c.uncountable.Load(modelID); no {
			return messages.EstimateCount(call.Body), nil
		}
		if !gjson.GetBytes(body, "max_tokens").Exists() { // InvokeModel's body needs it; the count does not depend on it
			body, _ = sjson.SetBytes(body, "max_tokens", 1)
		}
		out, err := cl.CountTokens(ctx, &bedrockruntime.CountTokensInput{ModelId: aws.String(modelID),
			Input: &types.CountTokensInputMemberInvokeModel{Value: types.InvokeModelTokensRequest{Body: body}}})
		if err != nil {
			switch cannotCount(err) {
			case countModel: // learnt: the next count makes no failing call
				c.uncountable.Store(modelID, true)
				fallthrough
			case countRequest:
				return messages.EstimateCount(call.Body), nil
			}
			return nil, Classify(d, err)
		}
		n := int64(0)
		if out.InputTokens != nil {
			n = int64(*out.InputTokens)
		}
		b := strconv.AppendInt([]byte(`{"input_tokens":`), n, 10)
		return response("application/json", io.NopCloser(bytes.NewReader(append(b, '}')))), nil
	case !call.Stream:
		out, err := cl.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(modelID), Body: body,
			ContentType: aws.String("application/json"), Accept: aws.String("application/json")})
		if err != nil {
			return nil, Classify(d, err)
		}
		return response("application/json", io.NopCloser(bytes.NewReader(out.Body))), nil
	}
	out, err := cl.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String(modelID), Body: body,
		ContentType: aws.String("application/json"), Accept: aws.String("application/json")}, ownCodec)
	if err != nil {
		return nil, Classify(d, err)
	}
	s := &invokeStream{src: out.GetStream(), d: d}
	s.Init(s)
	if err := s.first(); err != nil {
		s.src.Close()
		return nil, err
	}
	return response("text/event-stream", s), nil
}

// What CountTokens could not count: nothing (an error to pass on), the
// request (a document in it, a region without CountTokens...), or the model
// (Bedrock counts for some Claude models only).
const (
	countError = iota
	countRequest
	countModel
)

// cannotCount reads a CountTokens failure that says Bedrock cannot count
// rather than that the request is wrong: the count is then the gateway's
// estimate (flagged), as for any deployment that cannot count.
func cannotCount(err error) int {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return countError
	}
	msg := strings.ToLower(ae.ErrorMessage())
	switch {
	case ae.ErrorCode() == "UnknownOperationException":
		return countModel
	case ae.ErrorCode() != "ValidationException" || !strings.Contains(msg, "count"):
		return countError
	case strings.Contains(msg, "model") && (strings.Contains(msg, "support") || strings.Contains(msg, "not available")):
		return countModel // "The provided model doesn't support counting tokens."
	case strings.Contains(msg, "not supported") || strings.Contains(msg, "unsupported"):
		return countRequest // "Document input not supported for token counting"
	}
	return countError
}

// invokeBody is the InvokeModel body of a Messages call.
func invokeBody(call wire.Call) ([]byte, error) {
	body, err := messages.HostBody(call.Body, BedrockAnthropicVersion, "model", "stream")
	if err != nil {
		return nil, err
	}
	if h := call.Anthropic; h != nil && h.Beta != "" && !gjson.GetBytes(body, "anthropic_beta").Exists() {
		var betas []string
		for _, b := range strings.Split(h.Beta, ",") {
			if b = strings.TrimSpace(b); b != "" {
				betas = append(betas, b)
			}
		}
		body, _ = sjson.SetBytes(body, "anthropic_beta", betas)
	}
	return body, nil
}

// ResponseEvents is an InvokeModelWithResponseStream event stream
// (*bedrockruntime.InvokeModelWithResponseStreamEventStream).
type ResponseEvents interface {
	Events() <-chan types.ResponseStream
	Err() error
	Close() error
}

// invokeStream re-emits an InvokeModelWithResponseStream's chunks (each an
// Anthropic stream event) as Anthropic SSE, one chunk per Read's refill;
// an exception after the first chunk becomes an error event.
type invokeStream struct {
	src     ResponseEvents
	d       *config.Deployment
	pending []byte // the first chunk, read by first
	chunks.Reader
}

// first waits for the first chunk; an exception instead is returned.
func (s *invokeStream) first() error {
	for {
		ev, ok := <-s.src.Events()
		if !ok {
			if err := s.src.Err(); err != nil {
				return Classify(s.d, err)
			}
			return apierr.New(apierr.UpstreamConnection, "the Bedrock stream ended before its first event")
		}
		if c, ok := ev.(*types.ResponseStreamMemberChunk); ok {
			s.pending = c.Value.Bytes
			return nil
		}
	}
}

// Fill appends the next chunk's event; after the last, io.EOF.
func (s *invokeStream) Fill() error {
	payload := s.pending
	s.pending = nil
	for payload == nil {
		ev, ok := <-s.src.Events()
		if !ok {
			if err := s.src.Err(); err != nil {
				s.Out = append(s.Out, apierr.AnthropicSSE(Classify(s.d, err))...)
			}
			return io.EOF
		}
		if c, ok := ev.(*types.ResponseStreamMemberChunk); ok {
			payload = c.Value.Bytes
		}
	}
	s.NamedEvent(wire.MessagesEventType(payload), bytes.TrimSpace(payload))
	return nil
}

func (s *invokeStream) Close() error { return s.src.Close() }
