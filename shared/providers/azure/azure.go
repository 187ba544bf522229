// Package azure builds requests for Azure OpenAI deployments:
// {api_base}/openai/deployments/{deployment}/{operation}?api-version=...,
// authenticated with the api-key header.
package azure

import (
	"bytes"
	"context"
	"net/http"
	"net/url"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

// DefaultAPIVersion is used when a deployment sets no api_version.
const DefaultAPIVersion = "2024-10-21"

// NewRequest returns the upstream request for call on deployment d.
func NewRequest(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Request, error) {
	version := d.APIVersion
	if version == "" {
		version = DefaultAPIVersion
	}
	u := d.APIBase + "/openai/deployments/" + url.PathEscape(d.Model) + call.Op.Path() + "?api-version=" + url.QueryEscape(version)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(call.Body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	if call.Stream {
		req.Header["Accept"] = []string{"text/event-stream"}
	}
	if d.APIKey != "" {
		req.Header["Api-Key"] = []string{d.APIKey}
	}
	return req, nil
}

// SupportsStreamUsage reports whether the api-version accepts
// stream_options.include_usage (added in 2024-09-01-preview, GA 2024-10-21).
func SupportsStreamUsage(version string) bool {
	if version == "" {
		version = DefaultAPIVersion
	}
	return version >= "2024-09-01"
}
