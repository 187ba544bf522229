package gateway

import (
	"context"
	"net/http"
	"strconv"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/providers/messages"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// countTokens serves POST /v1/messages/count_tokens: authenticated and
// checked for model access like a request, routed like one (retries and
// fallbacks included), but neither admitted against limits nor billed (it
// costs nothing at Anthropic or Bedrock, and LiteLLM does not count it).
// Anthropic deployments answer with Anthropic's own count, Bedrock ones
// with Bedrock's CountTokens; the others with the gateway's estimate,
// flagged by the X-Sluice-Token-Count: estimate header.
func (h *Handler) countTokens(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	w.Header()["X-Litellm-Call-Id"] = []string{newCallID()}
	p, err := h.authenticate(r)
	if err != nil {
		apierr.WriteAnthropic(w, err)
		return
	}
	buf := getBuf()
	defer putBuf(buf)
	req, err := h.parse(w, r, buf, wire.Parse, false)
	if err == nil && req.Model == "" {
		err = apierr.New(apierr.InvalidRequest, "model: field required")
	}
	var pl plan
	if err == nil {
		pl.resolve(h.router, req)
		err = h.checkPrincipal(ctx, p, req, &pl)
	}
	if err != nil {
		apierr.WriteAnthropic(w, err)
		return
	}
	hdrs := anthropicHeaders(r)
	prompt := wire.EstimateTokens(req.Body)
	var out []byte
	var estimate bool
	attempt := func(ctx context.Context, a *router.Attempt) (router.Outcome, error) {
		body := req.MessagesBody(a.ProviderModel)
		resp, err := h.provider.Do(ctx, a.Deployment, wire.Call{Op: wire.OpCountTokens, Body: body, PromptTokens: prompt, Anthropic: hdrs})
		if err != nil {
			return router.Outcome{}, err
		}
		defer resp.Body.Close()
		b := getBuf()
		defer putBuf(b)
		if _, err := b.ReadFrom(resp.Body); err != nil {
			return router.Outcome{}, providers.TransportError(ctx, a.Deployment, err)
		}
		if !wire.Valid(b.Bytes()) {
			return router.Outcome{}, apierr.New(apierr.UpstreamServer, "deployment %s returned a count that is not valid JSON", a.Deployment.ID)
		}
		out = append(out[:0], b.Bytes()...)
		estimate = resp.Header.Get(messages.EstimateHeader) != ""
		return router.Outcome{Committed: true}, nil
	}
	rreq := &router.Request{Model: req.Model, CallID: w.Header()["X-Litellm-Call-Id"][0], PromptTokens: prompt,
		Fallbacks: req.Fallbacks, FallbacksSet: req.FallbacksSet, NoFallbacks: req.NoFallbacks, NumRetries: req.NumRetries,
		Target: pl.target, TargetErr: pl.err}
	res, err := h.router.Do(ctx, rreq, attempt)
	if err != nil {
		apierr.WriteAnthropic(w, err)
		return
	}
	if res.Final != nil {
		h.setHeadersFor(w, res.Final)
	}
	hd := w.Header()
	if estimate {
		hd[messages.EstimateHeader] = []string{"estimate"}
	}
	hd["Content-Length"] = []string{strconv.Itoa(len(out))}
	writeJSON(w, http.StatusOK, out)
}

// setHeadersFor sets the route headers of a's deployment on w.
func (h *Handler) setHeadersFor(w http.ResponseWriter, a *router.Attempt) {
	x := exchange{h: h, w: w}
	x.setRouteHeaders(a)
}
