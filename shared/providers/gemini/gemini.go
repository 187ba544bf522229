// Package gemini speaks Google's Gemini API (generateContent,
// streamGenerateContent?alt=sse, embedContent, batchEmbedContents) for
// deployments named gemini/<model> (Google AI Studio), and is built to be
// reused by any other host of the same API (Gemini on Vertex AI): the wire
// format is kept apart from where a call goes and how it is authenticated.
//
// The gateway speaks OpenAI's chat format on both sides: a chat completions
// body is translated to a generateContent body, and the answer (JSON, or
// Gemini's SSE stream) back to an OpenAI chat completion or OpenAI SSE
// chunks, presented as a plain *http.Response so the gateway reads it as it
// reads any OpenAI upstream.
//
// # Exported API (stable: added to, never renamed)
//
// Where a call goes and its credentials:
//
//	type Endpoint interface {
//		URL(d *config.Deployment, model, method string) (string, error)
//		Authorize(ctx context.Context, d *config.Deployment, req *http.Request) error
//	}
//	type AIStudio struct{}          // the Endpoint of gemini/ deployments
//	const DefaultBase               // https://generativelanguage.googleapis.com/v1beta
//	const (MethodGenerate, MethodStream, MethodEmbed, MethodBatchEmbed)
//
// The vendor (providers.Vendor) over an Endpoint:
//
//	func New(client *http.Client) *Provider                        // AI Studio
//	func NewWithEndpoint(client *http.Client, ep Endpoint) *Provider // e.g. Vertex
//	func (p *Provider) Do(ctx, d, call wire.Call) (*http.Response, error)
//	func (p *Provider) StreamUsage(d *config.Deployment) bool
//
// The wire format, for a caller that sends the request itself:
//
//	type Options struct{ Model string; DropParams bool }
//	func Model(d *config.Deployment, body []byte) string                  // the model a call names
//	func TranslateRequest(body []byte, o Options) ([]byte, error)          // chat -> generateContent
//	func TranslateResponse(raw []byte, o Options, created int64) ([]byte, error)
//	func NewStream(body io.ReadCloser, o Options, includeUsage bool, created int64) io.ReadCloser
//	func Blocked(raw []byte) (status int, body []byte, blocked bool)     // safety blocks as errors
//	func TranslateEmbeddings(body []byte, model string) (method string, out []byte, err error)
//	func EmbeddingsResponse(raw []byte, model string, b64 bool) ([]byte, error)
//	func ErrorResponse(resp *http.Response) *http.Response               // Google's error -> OpenAI's shape
//	func CleanSchema(s gjson.Result, ordering bool) (json.RawMessage, error)
//	func FinishReason(reason string) string
//	func ReadUsage(usageMetadata gjson.Result) Usage                     // thinking billed as output
//	const ThoughtSeparator                                               // call id + thought signature
//	var Errors catalog.ErrorWords                                         // listed in providers.words
//
// Provider.Do uses all of them: a Vertex host needs only an Endpoint.
// Authentication of AIStudio: the key (d.Key()) in the x-goog-api-key
// header, never in the URL (a URL is quoted by transport errors); with an
// api_base that is not Google's own host (a proxy such as Cloudflare's AI
// gateway), as a bearer token, as LiteLLM sends it there.
package gemini

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/chunks"
	"github.com/sluice-gw/sluice/shared/wire"
)

// DefaultBase is Google AI Studio's API base, with its version: a method's
// URL is {base}/models/{model}:{method}.
const DefaultBase = "https://generativelanguage.googleapis.com/v1beta"

// googleHost is the host of DefaultBase: an api_base on it takes the key as
// x-goog-api-key; any other host (a proxy) as a bearer token.
const googleHost = "generativelanguage.googleapis.com"

// The Gemini API's methods.
const (
	MethodGenerate   = "generateContent"
	MethodStream     = "streamGenerateContent" // with alt=sse (added by Do)
	MethodEmbed      = "embedContent"
	MethodBatchEmbed = "batchEmbedContents"
)

// Endpoint says where a Gemini call goes and how it is authenticated: the
// part of a call that differs between Google AI Studio and Vertex AI.
type Endpoint interface {
	// URL returns the URL of method for model (without alt=sse, which Do
	// adds to a stream's URL).
	URL(d *config.Deployment, model, method string) (string, error)
	// Authorize sets req's credentials. An error is returned to the
	// caller as it is (an *apierr.Error keeps its kind).
	Authorize(ctx context.Context, d *config.Deployment, req *http.Request) error
}

// AIStudio is the Endpoint of gemini/ deployments: {api_base}/models/
// {model}:{method}, api_base defaulting to DefaultBase.
type AIStudio struct{}

// URL implements Endpoint.
func (AIStudio) URL(d *config.Deployment, model, method string) (string, error) {
	base := strings.TrimRight(d.APIBase, "/")
	if base == "" {
		base = DefaultBase
	}
	model = strings.TrimPrefix(model, "models/")
	return base + "/models/" + url.PathEscape(model) + ":" + method, nil
}

// Authorize implements Endpoint: x-goog-api-key for Google's host, a bearer
// token for a proxy's.
func (AIStudio) Authorize(_ context.Context, d *config.Deployment, req *http.Request) error {
	k := d.Key()
	if k == "" {
		return nil // Google answers 403 (PERMISSION_DENIED), classified as auth
	}
	if req.URL.Hostname() == googleHost {
		req.Header["X-Goog-Api-Key"] = []string{k}
	} else {
		req.Header["Authorization"] = []string{"Bearer " + k}
	}
	return nil
}

// Provider sends calls to the deployments of one Endpoint.
type Provider struct {
	client   *http.Client
	endpoint Endpoint
}

// New returns the Provider of gemini/ deployments (Google AI Studio).
func New(client *http.Client) *Provider { return NewWithEndpoint(client, AIStudio{}) }

// NewWithEndpoint returns a Provider sending through client to ep.
func NewWithEndpoint(client *http.Client, ep Endpoint) *Provider {
	return &Provider{client: client, endpoint: ep}
}

// StreamUsage reports that a stream may always be asked for its usage: every
// Gemini stream carries usageMetadata.
func (*Provider) StreamUsage(*config.Deployment) bool { return true }

// Do sends call (chat or embeddings) to d and returns the answer in OpenAI's
// shapes. A non-2xx response is returned with its error in OpenAI's shape
// (ErrorResponse), for the caller to classify; so is a prompt blocked by
// Gemini's safety filters (a 400 whose code is content_filter).
func (p *Provider) Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	model := Model(d, call.Body)
	var method string
	var body []byte
	o := Options{Model: model, DropParams: d.DropParams || call.DropParams}
	var err error
	switch call.Op {
	case wire.OpChat:
		method = MethodGenerate
		if call.Stream {
			method = MethodStream
		}
		body, err = TranslateRequest(call.Body, o)
	case wire.OpEmbeddings:
		method, body, err = TranslateEmbeddings(call.Body, model)
	default:
		return nil, apierr.New(apierr.InvalidRequest, "deployment %s (%s) serves chat completions and embeddings only, not %s", d.ID, d.Provider, call.Op.Path())
	}
	if err != nil {
		return nil, err
	}
	u, err := p.endpoint.URL(d, model, method)
	if err != nil {
		return nil, err
	}
	if call.Stream && call.Op == wire.OpChat {
		if strings.Contains(u, "?") {
			u += "&alt=sse"
		} else {
			u += "?alt=sse"
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, apierr.New(apierr.UpstreamConnection, "deployment %s: invalid Gemini URL", d.ID)
	}
	req.Header["Content-Type"] = []string{"application/json"}
	if err := p.endpoint.Authorize(ctx, d, req); err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, stripURL(err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return ErrorResponse(resp), nil
	}
	created := time.Now().Unix()
	if call.Op == wire.OpEmbeddings {
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		out, err := EmbeddingsResponse(raw, model, gjson.GetBytes(call.Body, "encoding_format").Str == "base64")
		if err != nil {
			return nil, apierr.New(apierr.UpstreamServer, "deployment %s: %s", d.ID, err)
		}
		return chunks.Replace(resp, "application/json", out), nil
	}
	if !call.Stream {
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if status, body, blocked := Blocked(raw); blocked {
			return chunks.Replace(resp, "application/json", body, status), nil
		}
		out, err := TranslateResponse(raw, o, created)
		if err != nil {
			return nil, apierr.New(apierr.UpstreamServer, "deployment %s: %s", d.ID, err)
		}
		return chunks.Replace(resp, "application/json", out), nil
	}
	includeUsage := gjson.GetBytes(call.Body, "stream_options.include_usage").Bool()
	st := newDecoder(resp.Body, o, includeUsage, created)
	if status, body, ok := st.leadingError(); ok {
		st.Close()
		return chunks.Replace(resp, "application/json", body, status), nil
	}
	return chunks.Streamed(resp, &st.Stream), nil
}

// Model is the model a call to d names: the deployment's, or the request's
// for a wildcard deployment (gemini/*), without a "gemini/" or "models/"
// prefix.
func Model(d *config.Deployment, body []byte) string {
	m := d.Model
	if m == "*" || m == "" {
		m = gjson.GetBytes(body, "model").Str
		m = strings.TrimPrefix(m, "gemini/")
	}
	return strings.TrimPrefix(m, "models/")
}

// stripURL removes the URL from a transport error: a URL may carry a key
// (an Endpoint's query), and the gateway's message names the deployment.
func stripURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
