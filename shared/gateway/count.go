package gateway

import (
	"context"
	"net/http"
	"strconv"

	"github.com/sluice-gw/sluice/shared/providers/messages"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Anthropic's POST /v1/messages/count_tokens: an API of the request stages
// (request.go) like the others, authenticated and checked for model access
// like a request and routed like one (retries and fallbacks included), but
// uncounted: neither admitted against limits nor reserved under strict
// budgets nor recorded (no OnComplete, so no spend event, and no metrics):
// it costs nothing at Anthropic or Bedrock, and LiteLLM does not count it.
// Anthropic deployments answer with Anthropic's own count, Bedrock ones
// with Bedrock's CountTokens; the others with the gateway's estimate,
// flagged by the X-Sluice-Token-Count: estimate header. Its state is the
// client's Anthropic headers, as the Messages API's.
var _ = registerAPI(&api{op: wire.OpCountTokens, name: "count_tokens", paths: []string{"/v1/messages/count_tokens"},
	anthropic: true, uncounted: true, parseJSON: parseCount, prepare: anthropicState, attempt: (*exchange).countTokens})

// parseCount parses a count_tokens body, whose model is required
// (Anthropic's message).
func parseCount(body []byte) (*wire.Request, error) {
	req, err := wire.Parse(body)
	if err == nil && req.Model == "" {
		return nil, &wire.FieldError{Param: "model", Msg: "model: field required"}
	}
	return req, err
}

// countTokens makes one count attempt and, once it answered, writes the
// count: the route headers and the estimate flag, no cost (it has none) and
// none of the provider's headers.
func (x *exchange) countTokens(ctx context.Context, a *router.Attempt) (router.Outcome, error) {
	d := a.Deployment
	call := wire.Call{Op: wire.OpCountTokens, Body: x.req.MessagesBody(a.ProviderModel), PromptTokens: int(x.prompt)}
	call.Anthropic, _ = x.state.(*wire.AnthropicHeaders)
	b := getBuf()
	defer putBuf(b)
	resp, err := x.fetchWhole(ctx, d, call, b, false, "a count")
	if err != nil {
		return router.Outcome{}, err
	}
	x.setRouteHeaders(a)
	hd := x.w.Header()
	if resp.Header.Get(messages.EstimateHeader) != "" {
		hd[messages.EstimateHeader] = []string{"estimate"}
	}
	hd["Content-Length"] = []string{strconv.Itoa(b.Len())}
	x.committed = true
	hd["Content-Type"] = hdrJSON
	x.w.WriteHeader(http.StatusOK)
	_, err = x.w.Write(b.Bytes())
	x.done = err == nil
	return router.Outcome{Committed: true}, nil
}
