// Package openai builds requests for OpenAI's API and any OpenAI-compatible
// server (vLLM, Ollama, LM Studio, hosted providers) reached through api_base.
package openai

import (
	"bytes"
	"context"
	"net/http"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

// NewRequest returns the upstream request for call on deployment d.
func NewRequest(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.APIBase+call.Op.Path(), bytes.NewReader(call.Body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	if call.Stream {
		req.Header["Accept"] = []string{"text/event-stream"}
	}
	if d.APIKey != "" {
		req.Header["Authorization"] = []string{"Bearer " + d.APIKey}
	}
	return req, nil
}
