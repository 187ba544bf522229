package gateway

import (
	"context"
	"net/http"
	"slices"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// One value per API. An api says everything the request stages (request.go,
// admission.go, strict.go, unary.go, stream.go) ask of the API they serve:
// where it is served, how its body is parsed, what an attempt calls, how its
// usage and price are read, its worst-case reservation, its error shape and
// whether it is free. The stages name no wire.Op: they read the request's
// api. A new API is one value, registered by registerAPI in its own file
// (rerank.go is the smallest), plus its operation in package wire (ops.go);
// the route table (routes.go) and /routes follow.

type api struct {
	op    wire.Op
	name  string   // LiteLLM's route name (/routes)
	paths []string // the paths it is served at (POST)
	azure string   // its path below Azure's /openai/deployments/{model}; "" none

	anthropic   bool // errors, and a cut stream's last event, in Anthropic's shape
	streams     bool // may answer an event stream ("stream": true)
	rawOut      bool // the upstream answers bytes that are not JSON (audio, text): not checked, its Content-Type passed on
	batch       bool // a comma-separated model is LiteLLM's batch completion (batch.go)
	injectUsage bool // a stream asks the provider for its usage (stream_options.include_usage)
	noOutput    bool // generates no output tokens: strict budgets reserve the input alone
	noPrompt    bool // the body is not a prompt (an audio file): no prompt estimate
	// media: priced per image, character, second or query rather than per
	// token (media.go); its strict-budget worst case is worstCase
	// (strict_media.go).
	media bool
	// free: costs nothing and reserves nothing (moderations).
	free bool
	// uncounted: not a request of its own account (count_tokens): admitted
	// against no rpm/tpm limit, reserving nothing under strict budgets,
	// and neither recorded (no OnComplete, so no spend event) nor observed
	// (metrics).
	uncounted bool
	// unreservable, if set, is why strict budgets cannot reserve its
	// worst case (a transcription's length is not known before the call).
	unreservable string
	// worstCase is the most a media request can cost on deployment d.
	worstCase func(d *config.Deployment, req *wire.Request) (int64, bool)

	// parseJSON parses a JSON body (nil: wire.Parse); parse replaces it
	// for a body of another kind, returning the API's own state too (a
	// transcription's form).
	parseJSON func(body []byte) (*wire.Request, error)
	parse     func(r *http.Request, body []byte, pathModel string) (req *wire.Request, state any, err error)
	// prepare runs once the request is admitted, before the router: it
	// returns the API's state and the deployment the request is pinned to
	// ("" none). nil: none.
	prepare func(h *Handler, ctx context.Context, r *http.Request, p *Principal, req *wire.Request) (state any, pin string, err error)
	// call builds an attempt's upstream call (nil: the JSON body with the
	// deployment's model; inject: stream usage was asked for).
	call func(x *exchange, a *router.Attempt) wire.Call
	// attempt replaces the whole upstream attempt after admission (nil:
	// unary.go or stream.go).
	attempt func(x *exchange, ctx context.Context, a *router.Attempt) (router.Outcome, error)
	// do sends a call (nil: the provider).
	do func(x *exchange, ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error)
	// bill bills a whole answer and returns its completion tokens (nil:
	// its token usage, read by usage, at the deployment's token price).
	bill func(x *exchange, a *router.Attempt, call wire.Call, out []byte) int64
	// usage reads a whole answer's token usage (nil: wire.UsageOf), and
	// textBytes measures its output when it reported none (nil:
	// wire.TextBytes).
	usage     func(out []byte) (wire.Usage, bool)
	textBytes func(out []byte) int
	// events reads its stream's events (nil: chat's).
	events *eventShape
	// sseError is the event that ends a stream the gateway cuts, and
	// inBand the client's copy of a provider's in-band error (nil:
	// OpenAI's chat error event, the provider's event redacted).
	sseError func(x *exchange, err error) []byte
	inBand   func(x *exchange, data []byte, d *config.Deployment) []byte
}

// eventShape is how an API's stream events read.
type eventShape struct {
	isError    func(data []byte) bool
	errorBody  func(data []byte) []byte // the error object of an error event (nil: the event)
	hasContent func(data []byte) bool
	usage      func(data []byte) (wire.Usage, bool)
}

var chatEvents = eventShape{isError: isError, hasContent: hasContent, usage: wire.UsageOf}

// apis are the registered APIs (registerAPI).
var apis []*api

// registerAPI adds a to the APIs the gateway serves (in a package-level
// var of a's file) and fills its defaults.
func registerAPI(a *api) *api {
	if a.usage == nil {
		a.usage = wire.UsageOf
	}
	if a.textBytes == nil {
		a.textBytes = wire.TextBytes
	}
	if a.events == nil {
		a.events = &chatEvents
	}
	apis = append(apis, a)
	return a
}

// sortedAPIs are the registered APIs by operation: the route table's order,
// whatever order the files registered them in.
func sortedAPIs() []*api {
	out := slices.Clone(apis)
	slices.SortFunc(out, func(a, b *api) int { return int(a.op) - int(b.op) })
	return out
}

// writeError answers an error in the shape of the request's API (nil:
// OpenAI's).
func writeError(w http.ResponseWriter, a *api, err error) {
	if a != nil && a.anthropic {
		apierr.WriteAnthropic(w, err)
		return
	}
	apierr.Write(w, err)
}

// The chat-shaped APIs: chat, text completions and embeddings.
var (
	chatAPI = registerAPI(&api{op: wire.OpChat, name: "chat_completion", paths: openAIPaths("/chat/completions"), azure: "/chat/completions",
		streams: true, batch: true, injectUsage: true})
	_ = registerAPI(&api{op: wire.OpCompletions, name: "completion", paths: openAIPaths("/completions"), azure: "/completions",
		streams: true, injectUsage: true})
	_ = registerAPI(&api{op: wire.OpEmbeddings, name: "embeddings", paths: openAIPaths("/embeddings"), azure: "/embeddings", noOutput: true})
)

// openAIPaths are the three places LiteLLM serves an OpenAI route: under
// /v1, bare, and under /openai/v1.
func openAIPaths(suffix string) []string {
	return []string{"/v1" + suffix, suffix, "/openai/v1" + suffix}
}
