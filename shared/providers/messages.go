package providers

import (
	"context"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/providers/bedrock"
	"github.com/sluice-gw/sluice/shared/providers/messages"
	"github.com/sluice-gw/sluice/shared/providers/vertex"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Anthropic's Messages API inbound (wire.OpMessages, OpCountTokens): a
// vendor that speaks it natively (Anthropic; Bedrock for Claude models)
// gets the client's body; every other one gets it translated to a chat
// completion and answers translated back (package messages), so the gateway
// always reads Anthropic's shapes.

// messagesVendor is a vendor that speaks the Messages API for some of its
// deployments.
type messagesVendor interface {
	// NativeMessages reports whether d takes call's Messages body as it is.
	NativeMessages(d *config.Deployment, call wire.Call) bool
	// Messages sends a Messages (or count_tokens) call to d, as Do does.
	Messages(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error)
}

var (
	_ messagesVendor = (*anthropic.Provider)(nil)
	_ messagesVendor = (*bedrock.Clients)(nil)
	_ messagesVendor = (*vertex.Provider)(nil)
)

// messagesDo sends a Messages call through v.
func messagesDo(ctx context.Context, v Vendor, d *config.Deployment, call wire.Call) (*http.Response, error) {
	if mv, ok := v.(messagesVendor); ok && mv.NativeMessages(d, call) {
		return mv.Messages(ctx, d, call)
	}
	if call.Op == wire.OpCountTokens {
		return messages.EstimateCount(call.Body), nil
	}
	chat, err := messages.ToChat(call.Body, call.DropParams || d.DropParams)
	if err != nil {
		return nil, err
	}
	inner := call
	inner.Op, inner.Body = wire.OpChat, chat
	resp, err := v.Do(ctx, d, inner)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	return messages.FromChat(resp, call.Stream, gjson.GetBytes(call.Body, "model").Str)
}

// MessagesError classifies an error event of a Messages stream
// ({"type":"error","error":{"type":...,"message":...}}): the status its type
// stands for, then the words of d's provider, as for any error.
func MessagesError(d *config.Deployment, data []byte) *apierr.Error {
	return Classify(d, anthropic.ErrorStatus(gjson.GetBytes(data, "error.type").Str), nil, data)
}
