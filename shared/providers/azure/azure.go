// Package azure speaks Azure OpenAI: OpenAI's API at
// {api_base}/openai/deployments/{deployment}/{operation}?api-version=...,
// authenticated with the api-key header.
package azure

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/openai"
	"github.com/sluice-gw/sluice/shared/wire"
)

// DefaultAPIVersion is used when a deployment sets no api_version.
const DefaultAPIVersion = "2024-10-21"

// Provider sends calls to Azure OpenAI deployments.
type Provider struct{ client *http.Client }

// New returns a Provider sending through client.
func New(client *http.Client) *Provider { return &Provider{client: client} }

// Do sends call to d; the response comes back as Azure sent it.
func (p *Provider) Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	if d.APIBase == "" {
		return nil, errNoBase(d)
	}
	req, err := NewRequest(ctx, d, call)
	return openai.Send(p.client, req, err)
}

// StreamUsage reports whether d's api-version accepts
// stream_options.include_usage.
func (*Provider) StreamUsage(d *config.Deployment) bool { return SupportsStreamUsage(d.APIVersion) }

// NewRequest returns the upstream request for call on deployment d.
func NewRequest(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Request, error) {
	if d.APIBase == "" {
		return nil, errNoBase(d)
	}
	version := d.APIVersion
	if version == "" {
		version = DefaultAPIVersion
	}
	u := d.APIBase + "/openai/deployments/" + url.PathEscape(d.Model) + call.Op.Path() + "?api-version=" + url.QueryEscape(version)
	if call.Op == wire.OpResponses {
		u = responsesURL(d)
	}
	req, err := openai.Post(ctx, u, call)
	if k := d.Key(); err == nil && k != "" {
		req.Header["Api-Key"] = []string{k}
	}
	return req, err
}

// errNoBase is the failure of a call to a deployment that has no api_base
// (the config set none and AZURE_API_BASE was unset at load).
func errNoBase(d *config.Deployment) error {
	return apierr.New(apierr.UpstreamNotFound, "azure deployment %q has no api_base: set litellm_params.api_base or %s", d.ModelName, config.AzureBaseEnv)
}

// SupportsStreamUsage reports whether the api-version accepts
// stream_options.include_usage (added in 2024-09-01-preview, GA 2024-10-21).
func SupportsStreamUsage(version string) bool {
	if version == "" {
		version = DefaultAPIVersion
	}
	return version >= "2024-09-01"
}
