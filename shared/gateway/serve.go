package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/providers/azure"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Header values shared by every response; net/http never modifies them.
var (
	hdrJSON        = []string{"application/json"}
	hdrEventStream = []string{"text/event-stream"}
	hdrNoCache     = []string{"no-cache"}
	hdrNo          = []string{"no"}
	smallInts      = func() (s [10][]string) {
		for i := range s {
			s[i] = []string{strconv.Itoa(i)}
		}
		return s
	}()
)

func intHeader(n int) []string {
	if n >= 0 && n < len(smallInts) {
		return smallInts[n]
	}
	return []string{strconv.Itoa(n)}
}

// depHeader holds a deployment's header values, built once.
type depHeader struct{ id, base []string }

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer { b := bufPool.Get().(*bytes.Buffer); b.Reset(); return b }

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		bufPool.Put(b)
	}
}

// readBody reads the request body up to the limit.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) error {
	if r.ContentLength > h.maxBody {
		return tooLarge(h.maxBody)
	}
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + 1)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(h.maxBody)
		}
		return &apierr.Error{Kind: apierr.InvalidRequest, Message: "could not read the request body", Cause: err}
	}
	return nil
}

func tooLarge(limit int64) error {
	return apierr.New(apierr.TooLarge, "request body is larger than the limit of %d bytes", limit)
}

// post serves chat completions and embeddings.
func (h *Handler) post(w http.ResponseWriter, r *http.Request, op wire.Op) {
	if !h.method(w, r, http.MethodPost) {
		return
	}
	c := &Completion{CallID: newCallID(), Started: time.Now(), Operation: op}
	w.Header()["X-Litellm-Call-Id"] = []string{c.CallID}
	var x *exchange
	defer func() { h.recoverPanic(r.Context(), recover(), w, x, c.CallID) }()
	p, err := h.authenticate(r)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	c.Principal = p
	buf := getBuf()
	defer putBuf(buf)
	if err := h.readBody(w, r, buf); err != nil {
		apierr.Write(w, err)
		return
	}
	req, err := wire.Parse(buf.Bytes())
	if err != nil {
		e := &apierr.Error{Kind: apierr.InvalidRequest, Message: "invalid request body: " + err.Error()}
		var fe *wire.FieldError
		if errors.As(err, &fe) {
			e.Message, e.Param = fe.Msg, fe.Param
		}
		apierr.Write(w, e)
		return
	}
	if req.Model == "" {
		e := apierr.New(apierr.InvalidRequest, "missing required parameter: 'model'")
		e.Param = "model"
		apierr.Write(w, e)
		return
	}
	if op == wire.OpEmbeddings {
		req.Stream = false
	}
	c.Stream = req.Stream
	if p.Key != nil || p.Team != nil {
		group, err := h.router.Group(req.Model)
		if err == nil {
			err = allowModel(p, req.Model, group)
		}
		if err != nil {
			apierr.Write(w, err)
			return
		}
	}
	prompt := wire.EstimateTokens(req.Body)
	rreq := &router.Request{
		Model: req.Model, CallID: c.CallID, PromptTokens: prompt, Stream: req.Stream,
		Tags: req.Tags, Fallbacks: req.Fallbacks, FallbacksSet: req.FallbacksSet, NoFallbacks: req.NoFallbacks,
		NumRetries: req.NumRetries,
	}
	x = &exchange{h: h, w: w, req: req, op: op, c: c, estimate: int64(prompt) + req.MaxTokens}
	res, err := h.router.Do(r.Context(), rreq, x.attempt)
	c.Attempt, c.Retries, c.Fallbacks = res.Final, res.Retries, res.Fallbacks
	if err == nil {
		x.correctTokens(r.Context(), res.Final)
	}
	if err != nil {
		c.Err = err
		if !x.committed {
			x.setRouteHeaders(res.Final)
			e := apierr.From(err)
			if e.Kind == apierr.Internal {
				h.log.LogAttrs(r.Context(), slog.LevelError, "internal error", slog.String("call_id", c.CallID), slog.String("error", err.Error()))
			}
			c.StatusCode = e.HTTPStatus()
			apierr.Write(w, e)
		}
	} else {
		c.StatusCode = http.StatusOK
	}
	c.Latency = time.Since(c.Started)
	if h.onComplete != nil {
		h.onComplete(r.Context(), c)
	}
}

// recoverPanic turns a panic in a request into a clean error for the client
// (a 500, or an SSE error event once a stream started) and one log line with
// the panic's value, never a stack trace.
func (h *Handler) recoverPanic(ctx context.Context, v any, w http.ResponseWriter, x *exchange, callID string) {
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	h.log.LogAttrs(ctx, slog.LevelError, "panic", slog.String("call_id", callID), slog.String("panic", fmt.Sprint(v)))
	e := apierr.New(apierr.Internal, "internal error")
	if x != nil && x.committed {
		if x.req.Stream {
			_, _ = w.Write(apierr.SSE(e))
			flush(w)
		}
		return
	}
	apierr.Write(w, e)
}

// exchange is one client request's state across its attempts.
type exchange struct {
	h         *Handler
	w         http.ResponseWriter
	req       *wire.Request
	op        wire.Op
	c         *Completion
	committed bool
	// estimate is the token count admitted before the call (prompt estimate
	// plus the max_tokens cap), corrected with the real usage afterwards.
	estimate   int64
	admitted   bool // the key's and team's scopes were counted
	admissions []limits.Admission
}

func (x *exchange) setRouteHeaders(a *router.Attempt) {
	if a == nil {
		return
	}
	hd := x.w.Header()
	if dh, ok := x.h.depHeaders[a.Deployment]; ok {
		hd["X-Litellm-Model-Id"] = dh.id
		if dh.base != nil {
			hd["X-Litellm-Model-Api-Base"] = dh.base
		}
	} else {
		hd["X-Litellm-Model-Id"] = []string{a.Deployment.ID}
	}
	if g, ok := x.h.groupHeaders[a.Group]; ok {
		hd["X-Litellm-Model-Group"] = g
	} else {
		hd["X-Litellm-Model-Group"] = []string{a.Group}
	}
	hd["X-Litellm-Attempted-Retries"] = intHeader(a.Retries)
	hd["X-Litellm-Attempted-Fallbacks"] = intHeader(a.Fallback)
}

// injectUsage says whether to ask a stream for its usage even when the
// client did not (to account tokens); the extra chunk is not forwarded.
func injectUsage(d *config.Deployment) bool {
	switch d.Protocol {
	case config.ProtocolOpenAI, config.ProtocolMock:
		return true
	case config.ProtocolAzure:
		return azure.SupportsStreamUsage(d.APIVersion)
	}
	return false
}

// attempt makes one try for the router.
func (x *exchange) attempt(ctx context.Context, a *router.Attempt) error {
	if err := x.admit(ctx, a); err != nil {
		return err
	}
	d := a.Deployment
	inject := x.req.Stream && !x.req.IncludeUsage && injectUsage(d)
	body := x.req.WithModel(a.ProviderModel, inject)
	if len(d.Params) > 0 {
		body = wire.SetDefaults(body, d.Params)
	}
	call := wire.Call{Op: x.op, Body: body, Stream: x.req.Stream, PromptTokens: wire.EstimateTokens(body)}
	if x.req.HasMock {
		call.MockResponse = &x.req.MockResponse
	}
	if !x.req.Stream {
		if a.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, a.Timeout)
			defer cancel()
		}
		return x.unary(ctx, a, call)
	}
	return x.stream(ctx, a, call, inject)
}

// unary forwards a non-streamed response once it is complete, so that a
// failure while reading it can still be retried.
func (x *exchange) unary(ctx context.Context, a *router.Attempt, call wire.Call) error {
	d := a.Deployment
	resp, err := x.h.provider.Do(ctx, d, call)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf := getBuf()
	defer putBuf(buf)
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return providers.TransportError(ctx, d, err)
	}
	out := buf.Bytes()
	if u, ok := wire.UsageOf(out); ok {
		x.c.Usage, x.c.HasUsage = u, true
		a.Tokens = u.CompletionTokens
		x.c.Cost = cost(d, u)
	}
	x.setRouteHeaders(a)
	hd := x.w.Header()
	hd["Content-Type"] = hdrJSON
	hd["Content-Length"] = []string{strconv.Itoa(len(out))}
	if x.c.HasUsage {
		hd["X-Litellm-Response-Cost"] = []string{strconv.FormatFloat(x.c.Cost, 'g', 8, 64)}
	}
	copyUpstreamHeaders(hd, resp.Header)
	x.committed, a.Committed = true, true
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(out)
	return nil
}

// copyUpstreamHeaders passes the provider's request id and rate-limit
// headers through, prefixed as LiteLLM does.
func copyUpstreamHeaders(dst, src http.Header) {
	for k, v := range src {
		if k == "X-Request-Id" || k == "Openai-Processing-Ms" || (len(k) > 12 && k[:12] == "X-Ratelimit-") {
			dst["Llm_provider-"+k] = v
		}
	}
}

func cost(d *config.Deployment, u wire.Usage) float64 {
	return float64(u.PromptTokens)*d.InputCostPerToken + float64(u.CompletionTokens)*d.OutputCostPerToken
}

// flush pushes written bytes to the client.
func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
		return
	}
	_ = http.NewResponseController(w).Flush()
}
