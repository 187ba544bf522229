// Package vertex calls Google's Vertex AI for deployments named
// vertex_ai/<model>: Anthropic's Claude through rawPredict and
// streamRawPredict (the Messages API body, so /v1/messages passes through
// and chat completions take the anthropic package's translation), and
// Gemini through generateContent and streamGenerateContent. Requests carry
// an OAuth access token made from the deployment's service account key
// (token.go).
package vertex

import (
	"bytes"
	"context"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/providers/gemini"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Provider sends calls to Vertex AI deployments.
type Provider struct {
	client *http.Client // renews a token Vertex refuses (renew.go)
	tokens *tokens
	claude *anthropic.Provider // the chat translation, sent through postClaude
	gemini *gemini.Provider    // the Gemini wire format, at Vertex's URLs (gemini.go)
}

// New returns a Provider sending through client (the token exchanges too).
func New(client *http.Client) *Provider {
	p := &Provider{tokens: &tokens{client: client}}
	p.client = renewing(client, p.tokens)
	p.claude = anthropic.Via(p.postClaude)
	p.gemini = gemini.NewWithEndpoint(p.client, geminiEndpoint{p.tokens})
	return p
}

// StreamUsage reports that a stream may always be asked for its usage: both
// translations count it from the stream's own events.
func (*Provider) StreamUsage(*config.Deployment) bool { return true }

// Do sends a chat call to d: Claude through the anthropic translation,
// Gemini through the gemini package's.
func (p *Provider) Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	switch model := modelOf(d, call.Body); {
	case call.Op != wire.OpChat:
		return nil, apierr.New(apierr.InvalidRequest, "deployment %s (vertex_ai) serves chat completions only, not %s", d.ID, call.Op.Path())
	case isClaude(model):
		return p.claude.Do(ctx, d, call)
	case isGemini(model):
		return p.gemini.Do(ctx, d, call)
	default:
		return nil, apierr.New(apierr.InvalidRequest, "deployment %s: model %q is not served on Vertex AI by this gateway (Claude and Gemini are)", d.ID, model)
	}
}

// modelOf is the Vertex model a call goes to: the deployment's, or for a
// wildcard deployment (vertex_ai/*) the one the body names.
func modelOf(d *config.Deployment, body []byte) string {
	if d.Model == "*" || d.Model == "" {
		return gjson.GetBytes(body, "model").Str
	}
	return d.Model
}

func isClaude(model string) bool { return strings.HasPrefix(model, "claude-") }

func isGemini(model string) bool { return strings.HasPrefix(model, "gemini-") }

// Host is Vertex AI's host for a location: the global endpoint, or the
// location's own.
func Host(location string) string {
	if location == "global" {
		return "aiplatform.googleapis.com"
	}
	return location + "-aiplatform.googleapis.com"
}

// URL is where method of a publisher's model is called for d: d's api_base
// (LiteLLM's custom base: the whole URL up to the model) with ":method"
// (and "?alt=sse" for a stream), else Vertex AI's own URL of the model in
// d's project and location (with alt=sse when sse).
func URL(d *config.Deployment, publisher, model, method string, stream, sse bool) string {
	var b strings.Builder
	if d.APIBase != "" {
		b.WriteString(d.APIBase)
		b.WriteByte(':')
		b.WriteString(method)
		if stream {
			b.WriteString("?alt=sse")
		}
		return b.String()
	}
	b.WriteString("https://")
	b.WriteString(Host(d.Vertex.Location))
	b.WriteString("/v1/projects/")
	b.WriteString(d.Vertex.Project)
	b.WriteString("/locations/")
	b.WriteString(d.Vertex.Location)
	b.WriteString("/publishers/")
	b.WriteString(publisher)
	b.WriteString("/models/")
	b.WriteString(model)
	b.WriteByte(':')
	b.WriteString(method)
	if sse {
		b.WriteString("?alt=sse")
	}
	return b.String()
}

// Post sends body to url with d's access token (a 401 renews it and sends
// once more: renew.go). A non-2xx answer comes back as it is.
func (p *Provider) Post(ctx context.Context, d *config.Deployment, url string, body []byte, h http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, apierr.New(apierr.InvalidRequest, "deployment %s: invalid Vertex AI URL", d.ID)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header["Content-Type"] = []string{"application/json"}
	if err := p.tokens.authorize(ctx, d, req); err != nil {
		return nil, err
	}
	return p.client.Do(req)
}
