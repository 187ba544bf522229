package gateway

import (
	"context"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Anthropic's Messages API inbound (POST /v1/messages, and ?beta=true as
// Claude Code sends it). A request passes the chat stages (request.go:
// authentication, model access, strict budgets, the router with admission
// per attempt, spend): only the attempt differs. The body goes to the
// provider as the client wrote it with the model replaced (wire.Call's
// OpMessages); every provider answers in Anthropic's shapes (Anthropic as
// it is, Bedrock's Claude through InvokeModel, the others translated by
// package providers/messages), so what the gateway reads back is Anthropic
// JSON or Anthropic SSE (messages_stream.go). Errors are Anthropic's shape
// (apierr.WriteAnthropic).

// messagesAPI is Anthropic's Messages API; its state is the client's
// Anthropic headers.
var messagesAPI = registerAPI(&api{op: wire.OpMessages, name: "anthropic_response", paths: []string{"/v1/messages"},
	anthropic: true, streams: true, attempt: (*exchange).messages,
	usage:     func(out []byte) (wire.Usage, bool) { return wire.MessagesUsage(gjson.GetBytes(out, "usage")) },
	textBytes: func(out []byte) int { return len(out) }, // without usage: the whole answer at four bytes a token
	prepare:   anthropicState,
	sseError:  func(_ *exchange, err error) []byte { return apierr.AnthropicSSE(err) },
})

// anthropicState is the Messages APIs' state (their prepare): the client's
// Anthropic headers.
func anthropicState(_ *Handler, _ context.Context, r *http.Request, _ *Principal, _ *wire.Request) (any, string, error) {
	return anthropicHeaders(r), "", nil
}

// anthropicHeaders are the client's Anthropic headers (nil: none).
func anthropicHeaders(r *http.Request) *wire.AnthropicHeaders {
	v, b := r.Header.Get("Anthropic-Version"), r.Header.Get("Anthropic-Beta")
	if vs := r.Header.Values("Anthropic-Beta"); len(vs) > 1 { // the header repeated: one list
		b = strings.Join(vs, ",")
	}
	if v == "" && b == "" {
		return nil
	}
	return &wire.AnthropicHeaders{Version: v, Beta: b}
}

// messages makes one Messages attempt (after its admission).
func (x *exchange) messages(ctx context.Context, a *router.Attempt) (router.Outcome, error) {
	body := x.req.MessagesBody(a.ProviderModel)
	call := wire.Call{Op: wire.OpMessages, Body: body, Stream: x.req.Stream, PromptTokens: wire.EstimateTokens(body),
		DropParams: x.req.DropParams}
	call.Anthropic, _ = x.state.(*wire.AnthropicHeaders)
	if x.req.HasMock {
		call.MockResponse = &x.req.MockResponse
	}
	if x.req.Stream {
		return x.messagesStream(ctx, a, call)
	}
	return x.unary(ctx, a, call) // Anthropic's JSON: usage by messagesAPI.usage
}
