package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// The request stage: read and parse the body, hand the router one attempt
// function, and answer or record however the request ends. The exchange is
// one request's state across its attempts.

// postModel serves a POST of API a (the route table's, routes.go), with the
// model named by the path (Azure's /openai/deployments/{model}/...; "" for
// none), which wins over the body's. Once the request passed
// authentication, OnComplete is called exactly once when it ends, whatever
// the outcome: success, error, panic or a client that went away.
func (h *Handler) postModel(w http.ResponseWriter, r *http.Request, a *api, pathModel string) {
	ctx := r.Context()
	c := &Completion{CallID: newCallID(), Started: time.Now(), Operation: a.op, CostKnown: true}
	w.Header()["X-Litellm-Call-Id"] = []string{c.CallID}
	var x *exchange
	authenticated := false
	defer func() {
		v := recover()
		if v != nil && v != http.ErrAbortHandler {
			h.recoverPanic(ctx, v, w, x, c)
		}
		if authenticated {
			h.complete(ctx, c, x)
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
	}()
	p, err := h.authenticate(r)
	if err != nil {
		writeError(w, a, err)
		if h.metrics != nil && !a.uncounted {
			h.observeRefused(c, err)
		}
		return
	}
	authenticated = !a.uncounted // count_tokens is not recorded (count.go)
	c.Principal = p
	buf := getBuf()
	defer putBuf(buf)
	req, state, err := h.parseAPI(w, r, buf, a, pathModel) // endpoints.go
	if err != nil {
		h.fail(ctx, w, a, c, err)
		return
	}
	if a.batch && strings.IndexByte(req.Model, ',') >= 0 { // batch.go
		authenticated = false // each model's call is recorded as its own request
		h.batch(w, r, req)
		return
	}
	applyAliases(p, req) // auth.go
	c.Model, c.EndUser, c.Tags = req.Model, req.User, req.Tags
	if h.logContent { // content.go
		captureRequest(c, req.Body)
	}
	pl := &c.plan // plan.go: the model group and fallbacks, resolved once
	pl.resolve(h.router, req)
	if err := requestTimeouts(r, req); err != nil { // controls.go
		h.fail(ctx, w, a, c, err)
		return
	}
	if req.Model == "" {
		e := apierr.New(apierr.InvalidRequest, "missing required parameter: 'model'")
		e.Param = "model"
		h.fail(ctx, w, a, c, e)
		return
	}
	c.Stream = req.Stream
	if err := h.checkPrincipal(ctx, p, req, pl); err != nil { // auth.go
		h.fail(ctx, w, a, c, err)
		return
	}
	// What is admitted once per request: a place among local mode's
	// streams, and the strict-budget reservation (strict.go), made with the
	// first attempt's admission (admission.go).
	if h.streams != nil && req.Stream { // local mode's bound (limits_local.go)
		if !h.streams.acquire() {
			h.fail(ctx, w, a, c, h.streams.refusal)
			return
		}
		defer h.streams.release()
	}
	var hold *limits.Hold
	if h.strict != nil && !a.uncounted {
		if hold, err = h.reserve(ctx, p, req, pl, a, c.CallID); err != nil {
			h.fail(ctx, w, a, c, err)
			return
		}
	}
	var pin string
	if a.prepare != nil { // the API's own state (a Responses request's, responses.go)
		if state, pin, err = a.prepare(h, ctx, r, p, req); err != nil {
			h.fail(ctx, w, a, c, err)
			return
		}
	}
	prompt := 0 // an audio file is not a prompt
	if !a.noPrompt {
		prompt = wire.EstimateTokens(req.Body)
	}
	rreq := &router.Request{
		Model: req.Model, CallID: c.CallID, PromptTokens: prompt, Stream: req.Stream,
		Tags: req.Tags, Fallbacks: req.Fallbacks, FallbacksSet: req.FallbacksSet, NoFallbacks: req.NoFallbacks,
		NumRetries: req.NumRetries, Timeout: req.Timeout, StreamTimeout: req.StreamTimeout,
		Allowed: p.fallbackAccess(h.cfg.AccessGroups), Deployment: pin,
		Target: pl.target, TargetErr: pl.err, FallbackTargets: pl.fallbackTargets(),
	}
	if p.EndUser != nil {
		rreq.Region = p.EndUser.AllowedModelRegion
	}
	x = &exchange{h: h, w: w, req: req, api: a, c: c, prompt: int64(prompt), hold: hold, state: state}
	res, err := h.router.Do(ctx, rreq, x.attempt)
	x.end(ctx, res, err)
}

// parse reads the request's JSON body and parses it with parse
// (wire.Parse, or an API's own); stream is false unless the API streams.
func (h *Handler) parse(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer, parse func([]byte) (*wire.Request, error), streams bool) (*wire.Request, error) {
	if err := h.readBody(w, r, buf); err != nil {
		return nil, err
	}
	req, err := parse(buf.Bytes())
	if err != nil {
		e := &apierr.Error{Kind: apierr.InvalidRequest, Message: "invalid request body: " + err.Error()}
		var fe *wire.FieldError
		if errors.As(err, &fe) {
			e.Message, e.Param = fe.Msg, fe.Param
		}
		return nil, e
	}
	if !streams {
		req.Stream = false
	}
	return req, nil
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
		return apierr.BodyRead(err) // 408 when the body timed out (limits_local.go)
	}
	return nil
}

func tooLarge(limit int64) error {
	return apierr.New(apierr.TooLarge, "request body is larger than the limit of %d bytes", limit)
}

// clientGone reports whether the client went away: its request context was
// canceled (a deadline is not the client's doing).
func clientGone(ctx context.Context) bool { return errors.Is(ctx.Err(), context.Canceled) }

// fail answers an error before any output, and records it. A client that
// already went away sees nothing: the status recorded is 499.
func (h *Handler) fail(ctx context.Context, w http.ResponseWriter, a *api, c *Completion, err error) {
	e := apierr.From(err)
	c.Err, c.StatusCode = err, e.HTTPStatus()
	if a != nil && a.anthropic {
		_, c.StatusCode = apierr.Anthropic(e) // 529 for 503
	}
	if rf, ok := err.(*refusal); ok {
		c.Refused = rf.scope
	}
	if clientGone(ctx) {
		c.ClientGone, c.StatusCode = true, statusClientGone
	}
	writeError(w, a, e)
}

// statusClientGone is the status recorded for a client that went away
// before the response started (nginx's "client closed request").
const statusClientGone = 499

// complete finishes a request's Completion and hands it to OnComplete.
func (h *Handler) complete(ctx context.Context, c *Completion, x *exchange) {
	c.Ended = time.Now()
	c.Latency = c.Ended.Sub(c.Started)
	if x != nil {
		c.Attempts = x.attempts
		if c.Attempt == nil { // a panic left the router's result unknown
			c.Attempt = x.last
		}
		if len(x.leases) > 0 {
			x.releaseLeases(context.WithoutCancel(ctx))
		}
	}
	if h.onComplete != nil {
		h.onComplete(ctx, c)
	}
	if h.metrics != nil {
		h.observe(c)
	}
}

// recoverPanic turns a panic in a request into a clean error for the client
// (a 500, or an SSE error event once a stream started) and one log line with
// the panic's value, never a stack trace.
func (h *Handler) recoverPanic(ctx context.Context, v any, w http.ResponseWriter, x *exchange, c *Completion) {
	h.log.LogAttrs(ctx, slog.LevelError, "panic", slog.String("call_id", c.CallID), slog.String("panic", fmt.Sprint(v)))
	e := apierr.New(apierr.Internal, "internal error")
	c.Err = &apierr.Error{Kind: apierr.Internal, Message: "panic", Cause: fmt.Errorf("%v", v)}
	if x != nil && x.committed {
		c.StatusCode = http.StatusOK
		c.ClientGone = !x.done && clientGone(ctx)
		if x.req.Stream {
			_, _ = w.Write(x.sseError(e))
			flush(w)
		}
		return
	}
	c.StatusCode = e.HTTPStatus()
	if clientGone(ctx) {
		c.ClientGone, c.StatusCode = true, statusClientGone
	}
	writeError(w, x.apiOf(), e)
}

// exchange is one client request's state across its attempts.
type exchange struct {
	h   *Handler
	w   http.ResponseWriter
	req *wire.Request
	api *api // what the request asks of its API (apis.go)
	c   *Completion
	// committed: the response started (status and headers sent). The
	// attempt that commits reports it to the router in its Outcome.
	committed bool
	// estimate is the token count admitted before the call (prompt estimate
	// plus the max_tokens cap, limits.TokenEstimate; admit clamps it to the
	// first deployment's output limit), corrected with the real usage
	// afterwards.
	estimate int64
	prompt   int64        // the prompt estimate
	admitted bool         // the key's and team's scopes were counted
	hold     *limits.Hold // the strict-budget reservation to make with the first admission
	// state is the API's own (a Responses request's respState, a
	// transcription's form, the Messages API's headers), set by its parse
	// or prepare and read by its functions alone.
	state      any
	admissions []limits.Admission
	leases     []limits.Admission // admissions that took parallel-request leases (admission.go)
	attempts   int                // attempts made
	last       *router.Attempt    // the attempt made last (the router's Final, even after a panic)
	done       bool               // the response was written to its end
}

// apiOf is the exchange's API; nil for none (a nil exchange: OpenAI's shapes).
func (x *exchange) apiOf() *api {
	if x == nil {
		return nil
	}
	return x.api
}

// attempt makes one try for the router: admission (admission.go), then the
// upstream call, answered whole (unary.go) or event by event (stream.go).
// Its Outcome tells the router whether the response started, whether the
// failure was the request's own, and the tokens used.
func (x *exchange) attempt(ctx context.Context, a *router.Attempt) (router.Outcome, error) {
	x.attempts++
	x.last = a
	if x.req.MockTesting != wire.MockNone && a.Fallback == 0 { // controls.go
		return router.Outcome{Simulated: true}, mockTesting(a, x.req.MockTesting)
	}
	if out, err := x.admit(ctx, a); err != nil {
		return out, err
	}
	if x.api.attempt != nil {
		return x.api.attempt(x, ctx, a) // the Messages API's (messages.go)
	}
	d := a.Deployment
	if d.MockTimeout {
		return router.Outcome{}, mockTimeout(ctx, a, x.req.Stream)
	}
	inject := x.api.injectUsage && x.req.Stream && !x.req.IncludeUsage && providers.StreamUsage(d)
	var call wire.Call
	if x.api.call != nil {
		call = x.api.call(x, a) // a transcription's form (media.go)
	} else {
		body := x.req.WithModel(a.ProviderModel, inject)
		if len(d.Params) > 0 {
			body = wire.SetDefaults(body, d.Params)
		}
		call = wire.Call{Op: x.api.op, Body: body, Stream: x.req.Stream, PromptTokens: wire.EstimateTokens(body), DropParams: x.req.DropParams}
	}
	if x.req.HasMock {
		call.MockResponse = &x.req.MockResponse
	}
	if !x.req.Stream {
		return x.unary(ctx, a, call)
	}
	return x.stream(ctx, a, call, inject)
}

// do sends one attempt's call: through the API's do (a Responses
// request's, responses.go), else to the provider as it is.
func (x *exchange) do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	if x.api.do != nil {
		return x.api.do(x, ctx, d, call)
	}
	return x.h.provider.Do(ctx, d, call)
}

// end records how the request ended, and answers a failure that came before
// any output.
func (x *exchange) end(ctx context.Context, res *router.Result, err error) {
	h, c := x.h, x.c
	c.Attempt, c.Retries, c.Fallbacks = res.Final, res.Retries, res.Fallbacks
	if err == nil {
		x.correctTokens(ctx, res.Final)
	}
	switch {
	case err != nil && !x.committed:
		x.setRouteHeaders(res.Final)
		setFallbacksSkipped(x.w.Header(), res) // auth.go
		e := apierr.From(err)
		if e.Kind == apierr.Internal {
			h.log.LogAttrs(ctx, slog.LevelError, "internal error", slog.String("call_id", c.CallID), slog.String("error", err.Error()))
		}
		h.fail(ctx, x.w, x.api, c, e)
		c.Err = err
	case err != nil:
		c.Err, c.StatusCode = err, http.StatusOK // the stream had started
		c.ClientGone = !x.done && clientGone(ctx)
	default:
		c.StatusCode = http.StatusOK
		c.ClientGone = !x.done && clientGone(ctx)
	}
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
		if dh.region != nil {
			hd["X-Litellm-Model-Region"] = dh.region
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
	if x.req.Timeout > 0 {
		hd["X-Litellm-Timeout"] = timeoutHeader(x.req.Timeout)
	}
}

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
type depHeader struct{ id, base, region []string }

// bill adds an attempt the provider billed to the request's usage and cost,
// and returns its completion tokens (for the router's usage strategies).
func (x *exchange) bill(a *router.Attempt, u wire.Usage, estimated bool) int64 {
	p, ok := x.h.priceOf(a)
	return x.charge(u, estimated, p.CostNanos(u), ok)
}

// charge adds a billed attempt's usage and cost (known: its deployment has
// a price) to the request's, and returns its completion tokens.
func (x *exchange) charge(u wire.Usage, estimated bool, cost int64, known bool) int64 {
	c := x.c
	c.Usage = c.Usage.Add(u)
	c.HasUsage = true
	c.UsageEstimated = c.UsageEstimated || estimated
	if known {
		c.CostNanos = limits.AddSat(c.CostNanos, cost) // each is capped at MaxInt64
	} else {
		c.CostKnown = false
	}
	return u.CompletionTokens
}

// estimatedUsage is the usage of a call whose provider reported none: the
// prompt estimate, and the output text received at about four bytes a token.
func estimatedUsage(promptTokens int, textBytes int) wire.Usage {
	out := wire.TextTokens(textBytes)
	return wire.Usage{PromptTokens: int64(promptTokens), CompletionTokens: out, TotalTokens: int64(promptTokens) + out}
}

// priceOf is the price of an attempt's deployment, resolved at startup; a
// wildcard deployment's model is looked up per call (without allocating),
// and one with no price is warned about once.
func (h *Handler) priceOf(a *router.Attempt) (pricing.Price, bool) {
	d := a.Deployment
	if d.Price != nil {
		return *d.Price, true
	}
	if d.Model != "*" {
		return pricing.Price{}, false
	}
	if p, ok := h.prices.Lookup(d.Provider, a.ProviderModel, ""); ok {
		return p, true
	}
	if _, warned := h.unpriced.LoadOrStore(d.ID+"\x00"+a.ProviderModel, true); !warned {
		h.log.LogAttrs(context.Background(), slog.LevelWarn, "no price for deployment "+d.ID+" ("+d.Provider+"/"+a.ProviderModel+"); its cost is unknown",
			slog.String("deployment", d.ID), slog.String("model", a.ProviderModel))
	}
	return pricing.Price{}, false
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

// flush pushes written bytes to the client.
func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
		return
	}
	_ = http.NewResponseController(w).Flush()
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer { b := bufPool.Get().(*bytes.Buffer); b.Reset(); return b }

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		bufPool.Put(b)
	}
}
