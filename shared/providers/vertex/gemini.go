package vertex

import (
	"context"
	"net/http"

	"github.com/sluice-gw/sluice/shared/config"
)

// Gemini on Vertex AI: the gemini package's wire format (translation,
// streams, safety blocks, errors) at publishers/google/models/{model}:
// generateContent (streamGenerateContent?alt=sse, which gemini.Provider
// adds), with the service account's bearer token.

// geminiEndpoint is the gemini.Endpoint of vertex_ai/gemini-* deployments.
type geminiEndpoint struct{ tokens *tokens }

// URL implements gemini.Endpoint.
func (geminiEndpoint) URL(d *config.Deployment, model, method string) (string, error) {
	return URL(d, "google", model, method, false, false), nil
}

// Authorize implements gemini.Endpoint.
func (e geminiEndpoint) Authorize(ctx context.Context, d *config.Deployment, req *http.Request) error {
	return e.tokens.authorize(ctx, d, req)
}
