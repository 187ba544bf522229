package anthropic

import (
	"bytes"
	"context"
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

// The Messages API inbound (wire.OpMessages, OpCountTokens): the client's
// body goes to Anthropic as it is (the gateway replaced only its model),
// with the client's anthropic-version and anthropic-beta headers, and the
// answer (JSON or event stream) comes back untouched.

// NativeMessages reports that every Anthropic deployment speaks the
// Messages API.
func (*Provider) NativeMessages(*config.Deployment, wire.Call) bool { return true }

// Messages sends a Messages or count_tokens call to d. A non-2xx response
// comes back as it is, for the caller to classify.
func (p *Provider) Messages(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	path := "/messages"
	if call.Op == wire.OpCountTokens {
		path = "/messages/count_tokens"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint(d, path), bytes.NewReader(call.Body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	version := Version
	if h := call.Anthropic; h != nil {
		if h.Version != "" {
			version = h.Version
		}
		if h.Beta != "" {
			req.Header["Anthropic-Beta"] = []string{h.Beta}
		}
	}
	req.Header["Anthropic-Version"] = []string{version}
	if call.Stream {
		req.Header["Accept"] = []string{"text/event-stream"}
	}
	if k := d.Key(); k != "" {
		req.Header["X-Api-Key"] = []string{k}
	}
	return p.client.Do(req)
}

// endpoint is the URL of path (below /v1) on d's base.
func endpoint(d *config.Deployment, path string) string {
	base := strings.TrimSuffix(d.APIBase, "/")
	if base == "" {
		base = DefaultBase
	}
	if strings.HasSuffix(base, "/v1") {
		return base + path
	}
	return base + "/v1" + path
}
