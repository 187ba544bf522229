package gateway

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// unary forwards a non-streamed response once it is complete, so that a
// failure while reading it can still be retried: only a response sent
// commits the attempt.
func (x *exchange) unary(ctx context.Context, a *router.Attempt, call wire.Call) (router.Outcome, error) {
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.Timeout)
		defer cancel()
	}
	buf := getBuf()
	defer putBuf(buf)
	resp, err := x.fetchWhole(ctx, a.Deployment, call, buf, x.api.rawOut, "a response")
	if err != nil {
		return router.Outcome{}, err
	}
	out := buf.Bytes()
	if x.api.bill != nil {
		return x.answer(a, resp, out, x.api.bill(x, a, call, out)), nil // media.go
	}
	u, ok := x.api.usage(out)
	if !ok {
		return x.answer(a, resp, out, x.bill(a, estimatedUsage(call.PromptTokens, x.api.textBytes(out)), true)), nil
	}
	return x.answer(a, resp, out, x.bill(a, u, false)), nil
}

// fetchWhole makes call on d and reads the whole answer into buf. An
// answer cut short is a transport error, and one that is not valid JSON
// (unless raw; what names it in the error) the provider's failure: LiteLLM
// raises APIError, so the router may retry or fall back, and nothing is
// billed. The check costs 1 to 2 ns a byte (wire.BenchmarkValid).
func (x *exchange) fetchWhole(ctx context.Context, d *config.Deployment, call wire.Call, buf *bytes.Buffer, raw bool, what string) (*http.Response, error) {
	resp, err := x.do(ctx, d, call)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, providers.TransportError(ctx, d, err)
	}
	if !raw && !wire.Valid(buf.Bytes()) {
		return nil, &apierr.Error{Kind: apierr.UpstreamServer, Message: fmt.Sprintf("deployment %s returned %s that is not valid JSON", d.ID, what)}
	}
	return resp, nil
}

// answer writes a whole upstream answer (out) to the client: the route
// headers, the cost, the provider's headers passed on, then the body; the
// request is committed.
func (x *exchange) answer(a *router.Attempt, resp *http.Response, out []byte, tokens int64) router.Outcome {
	x.setRouteHeaders(a)
	hd := x.w.Header()
	hd["Content-Type"] = hdrJSON
	if x.api.rawOut { // audio, text: as the provider sent it
		if ct := resp.Header["Content-Type"]; len(ct) > 0 {
			hd["Content-Type"] = ct
		}
	}
	hd["Content-Length"] = []string{strconv.Itoa(len(out))}
	if x.c.CostKnown { // the cost of every billed attempt, in USD
		hd["X-Litellm-Response-Cost"] = []string{pricing.USD(x.c.CostNanos)}
	}
	copyUpstreamHeaders(hd, resp.Header)
	x.committed = true
	if x.h.logContent && !x.api.rawOut { // content.go
		x.c.Response = clipCopyBytes(out)
	}
	x.w.WriteHeader(http.StatusOK)
	_, err := x.w.Write(out)
	x.done = err == nil
	// Out now, not when the handler returns: the client need not wait for
	// the attempt's log line and the spend event. With Content-Length set
	// this is the response's one write either way.
	flush(x.w)
	return router.Outcome{Committed: true, Tokens: tokens}
}
