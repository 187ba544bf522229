// Package openai speaks OpenAI's API for OpenAI and any OpenAI-compatible
// server (vLLM, Ollama, LM Studio, hosted providers) reached through
// api_base. Requests and answers pass through untranslated.
package openai

import (
	"context"
	"net/http"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Provider sends calls to OpenAI-compatible deployments.
type Provider struct{ client *http.Client }

// New returns a Provider sending through client.
func New(client *http.Client) *Provider { return &Provider{client: client} }

// Do sends call to d; the response comes back as the server sent it.
func (p *Provider) Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	req, err := NewRequest(ctx, d, call)
	return Send(p.client, req, err)
}

// StreamUsage reports that a stream may always be asked for its usage
// (stream_options.include_usage).
func (*Provider) StreamUsage(*config.Deployment) bool { return true }

// Send sends a request built by NewRequest (or a variant's); a request that
// could not be built is the gateway's fault, not the upstream's.
func Send(client *http.Client, req *http.Request, err error) (*http.Response, error) {
	if err != nil {
		return nil, &apierr.Error{Kind: apierr.Internal, Message: "could not build the upstream request", Cause: err}
	}
	return client.Do(req)
}
