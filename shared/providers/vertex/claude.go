package vertex

import (
	"context"
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/messages"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Claude on Vertex AI takes Anthropic's Messages body at
// publishers/anthropic/models/{model}:rawPredict (streamRawPredict for a
// stream), without its "model" (the URL names it) and with Vertex's
// anthropic_version; it answers in Anthropic's shapes, JSON or SSE.

// AnthropicVersion is the anthropic_version Claude on Vertex AI wants.
const AnthropicVersion = "vertex-2023-10-16"

// claudeMethod is the method of a Claude call.
func claudeMethod(stream bool) string {
	if stream {
		return "streamRawPredict"
	}
	return "rawPredict"
}

// postClaude sends a Messages body (the anthropic package's translation of
// a chat call) to d's Claude model.
func (p *Provider) postClaude(ctx context.Context, d *config.Deployment, body []byte, stream bool) (*http.Response, error) {
	model := modelOf(d, body)
	body, err := claudeBody(body)
	if err != nil {
		return nil, err
	}
	var h http.Header
	if stream {
		h = http.Header{"Accept": {"text/event-stream"}}
	}
	return p.Post(ctx, d, URL(d, "anthropic", model, claudeMethod(stream), stream, false), body, h)
}

// claudeBody is a Messages body as Vertex AI takes it.
func claudeBody(body []byte) ([]byte, error) {
	return messages.HostBody(body, AnthropicVersion, "model")
}

// NativeMessages reports that a Claude deployment takes a Messages call's
// body as it is. count_tokens is estimated (Vertex's count-tokens model is
// not called).
func (*Provider) NativeMessages(d *config.Deployment, call wire.Call) bool {
	return call.Op == wire.OpMessages && isClaude(modelOf(d, call.Body))
}

// Messages sends a Messages call to d's Claude model, with the client's
// anthropic-beta header; the answer (JSON or event stream) comes back
// untouched.
func (p *Provider) Messages(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	model := modelOf(d, call.Body)
	body, err := claudeBody(call.Body)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if call.Stream {
		h["Accept"] = []string{"text/event-stream"}
	}
	if a := call.Anthropic; a != nil && strings.TrimSpace(a.Beta) != "" {
		h["Anthropic-Beta"] = []string{a.Beta}
	}
	return p.Post(ctx, d, URL(d, "anthropic", model, claudeMethod(call.Stream), call.Stream, false), body, h)
}
