// Package gateway is the OpenAI-compatible HTTP surface of the gateway: one
// http.Handler that serves local mode and the Lambda function URL alike.
//
// The hot path reads the few request fields it needs without decoding the
// body, asks the router for a deployment, and copies the provider's bytes
// through, event by event for streams.
//
// The route table (routes.go) maps a path to its API value (apis.go), which
// says what the stages ask of that API. A request passes its stages in
// order, each in its file: request.go
// (read and parse the body, run the router, answer however it ends),
// auth.go (who the request acts for, and what it may ask), admission.go
// (each attempt counted against the shared limits; strict.go reserves
// strict budgets), then unary.go or stream.go (the upstream call and the
// response). An attempt tells the router what became of it by returning a
// router.Outcome.
package gateway

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/responses"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// DefaultMaxBody is the request body limit: Lambda's 6 MB payload limit.
const DefaultMaxBody = 6 << 20

// Provider sends one attempt to one deployment (providers.Dispatcher).
type Provider interface {
	Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error)
}

// Completion is what a served request reports when it ends (for spend,
// TPM correction and metrics). OnComplete gets one for every POST request
// that passed authentication (but count_tokens, which is not counted:
// count.go): successes, errors, panics and clients that went away alike.
type Completion struct {
	CallID    string
	Principal *Principal
	Model     string          // the model the client asked for ("" if the body had none)
	EndUser   string          // the request body's "user"
	Tags      []string        // the request's tags (metadata.tags, tags)
	Attempt   *router.Attempt // final attempt; nil if none was made
	Attempts  int             // attempts made (admission refusals by a deployment included)
	// Usage sums the usage of every attempt the provider billed: reported
	// by the provider or, when it reported none (a stream cut short, a
	// provider that sends no usage), estimated from the bytes sent and
	// received, and then UsageEstimated is set. HasUsage: some attempt was
	// billed.
	Usage          wire.Usage
	HasUsage       bool
	UsageEstimated bool
	// CostNanos is the cost of every billed attempt in nano-USD (1e-9 USD).
	// CostKnown is false when a billed attempt's deployment has no price:
	// the cost is then unknown (CostNanos covers only the priced attempts),
	// never a silent $0. Nothing billed is a known 0.
	CostNanos int64
	CostKnown bool
	Err       error
	Started   time.Time
	Ended     time.Time
	Latency   time.Duration
	Retries   int
	Fallbacks int
	Stream    bool
	Operation wire.Op
	// StatusCode is the status sent; 499 when the client went away before
	// the response started.
	StatusCode int
	// ClientGone: the client disconnected (its request context was
	// canceled) before the response was complete.
	ClientGone bool
	// Hold is the strict-budget reservation the request made, or tried to
	// make when its admission got no answer (nil: none); its spend event
	// settles or releases it.
	Hold *limits.Hold
	// TTFT is, for a stream, the time from Started to its first content
	// event sent; 0 when none was.
	TTFT time.Duration
	// Metadata, Messages and Response are the request's metadata and
	// messages and a non-streamed answer's body, captured only when
	// content logging is on (content.go); nil otherwise.
	Metadata, Messages, Response json.RawMessage
	// Refused is the scope ("key", "team", "user", "team_member",
	// "end_user", "deployment") of the last limit or budget that refused
	// an admission of the request; "" if none did.
	Refused string
	// plan is the request's model group and fallbacks, resolved once
	// (plan.go).
	plan plan
}

// Options configure a Handler.
type Options struct {
	Config   *config.Config
	Router   *router.Router
	Provider Provider
	// Auth overrides authentication; by default the master key, and
	// virtual keys from Keys when a master key is set.
	Auth Authenticator
	// Keys reads virtual keys and teams; nil: master key only.
	Keys KeyReader
	// Limits admits requests against RPM/TPM limits and reserves
	// strict budgets' holds;
	// nil: no shared limits.
	Limits  limits.Store
	Now     func() time.Time
	Logger  *slog.Logger
	MaxBody int64
	// Prices prices the models of wildcard deployments ("openai/*"), per
	// call; other deployments carry their price (config.ResolvePrices).
	Prices *pricing.Table
	// OnComplete, if set, is called exactly once for every POST request
	// that passed authentication (count_tokens aside), after the response is written (or the
	// client went away). It must not block for long.
	OnComplete func(ctx context.Context, c *Completion)
	// Metrics counts every request (nil: no metrics).
	Metrics *metrics.Registry
	// MaxStreams bounds the streamed requests this instance serves at once
	// (local mode; limits_local.go); above it a stream request gets a 503
	// with Retry-After. <= 0: no bound.
	MaxStreams int
	// Responses keeps Responses API responses for previous_response_id
	// and the stored-response routes (responses.go); nil: in memory.
	Responses responses.Store
	// ResponsesTTL is how long a stored response is kept; <= 0:
	// responses.DefaultTTL.
	ResponsesTTL time.Duration
}

// Handler serves the OpenAI-compatible API.
type Handler struct {
	cfg        *config.Config
	router     *router.Router
	provider   Provider
	auth       Authenticator
	limits     limits.Store
	now        func() time.Time
	log        *slog.Logger
	maxBody    int64
	onComplete func(context.Context, *Completion)
	// logContent: a logging callback wants the requests' and answers'
	// content (content.go).
	logContent bool
	metrics    *metrics.Registry
	models     []byte // /v1/models body, built once
	prices     *pricing.Table
	unpriced   sync.Map // "deployment\x00model" of wildcard models with no price, warned once

	// strict holds each group's worst-case prices when
	// general_settings.strict_budgets is on; nil otherwise (strict.go).
	strict map[string]limits.Price
	// reach holds, with strict, each group's configured reach
	// (configuredReach, plan.go): itself first.
	reach map[string][]string

	depHeaders   map[*config.Deployment]depHeader
	groupHeaders map[string][]string

	streams *gate // Options.MaxStreams; nil: no bound

	responses    responses.Store
	responsesTTL time.Duration

	table routeIndex // the route table (routes.go)
}

// New returns the gateway handler.
func New(o Options) *Handler {
	h := &Handler{
		cfg: o.Config, router: o.Router, provider: o.Provider, auth: o.Auth,
		log: o.Logger, maxBody: o.MaxBody, onComplete: o.OnComplete, metrics: o.Metrics, limits: o.Limits, now: o.Now,
		prices: o.Prices, streams: newGate(o.MaxStreams, "streams", "GATEWAY_MAX_STREAMS"),
		responses: o.Responses, responsesTTL: o.ResponsesTTL,
		logContent: o.Config.Callbacks.LogContent(),
	}
	if h.responses == nil {
		h.responses = responses.NewMemory()
	}
	if h.responsesTTL <= 0 {
		h.responsesTTL = responses.DefaultTTL
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBody
	}
	if h.auth == nil {
		h.auth = newAccess(o.Config.General.MasterKey, o.Keys, h.now)
	}
	h.models = modelsJSON(o.Router.Models())
	if o.Config.General.StrictBudgets {
		h.strict = h.strictPrices()
	}
	h.depHeaders = make(map[*config.Deployment]depHeader, len(o.Config.Deployments))
	h.groupHeaders = map[string][]string{}
	for _, d := range o.Config.Deployments {
		dh := depHeader{id: []string{d.ID}}
		if d.APIBase != "" {
			dh.base = []string{config.DisplayURL(d.APIBase)} // no credentials a URL may carry
		}
		if d.Region != "" {
			dh.region = []string{d.Region}
		}
		h.depHeaders[d] = dh
		h.groupHeaders[d.ModelName] = []string{d.ModelName}
	}
	h.table = indexRoutes(buildRoutes())
	h.registerMetrics()
	return h
}

func modelsJSON(ms []router.Model) []byte {
	type entry struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	data := make([]entry, len(ms))
	for i, m := range ms {
		data[i] = entry{ID: m.ID, Object: "model", Created: 1700000000, OwnedBy: m.OwnedBy}
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "data": data})
	return b
}

// listModels answers GET /v1/models (models_list.go).
func (h *Handler) listModels(w http.ResponseWriter, r *http.Request) {
	p, ok := h.authGET(w, r)
	if !ok {
		return
	}
	body, err := h.modelsFor(r.Context(), p, r.URL.Query())
	if err != nil {
		apierr.Write(w, err)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// liveliness answers the liveness probes.
func (h *Handler) liveliness(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []byte(`"I'm alive!"`))
}

// authGET admits a GET (or HEAD) request and authenticates it; false: the
// refusal is written.
func (h *Handler) authGET(w http.ResponseWriter, r *http.Request) (*Principal, bool) {
	if !h.method(w, r, http.MethodGet) {
		return nil, false
	}
	p, err := h.authenticate(r)
	if err != nil {
		apierr.Write(w, err)
		return nil, false
	}
	return p, true
}

func (h *Handler) method(w http.ResponseWriter, r *http.Request, m string) bool {
	if r.Method == m || (m == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	w.Header().Set("Allow", m)
	apierr.Write(w, apierr.New(apierr.MethodNotAllowed, "%s %s is not allowed; use %s", r.Method, r.URL.Path, m))
	return false
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header()["Content-Type"] = hdrJSON
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// newCallID returns a random UUID-shaped id. Call ids need to be unique, not
// secret: the runtime's fast generator serves.
func newCallID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}
