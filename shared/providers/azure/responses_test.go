package azure

import (
	"context"
	"testing"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

// TestResponsesURL: Azure's Responses endpoint is the resource's, not the
// deployment's, with an api-version that has the Responses API.
func TestResponsesURL(t *testing.T) {
	for _, tt := range []struct{ version, want string }{
		{"", "https://r.openai.azure.com/openai/responses?api-version=2025-04-01-preview"},
		{"2024-10-21", "https://r.openai.azure.com/openai/responses?api-version=2025-04-01-preview"},
		{"2025-03-01-preview", "https://r.openai.azure.com/openai/responses?api-version=2025-03-01-preview"},
		{"preview", "https://r.openai.azure.com/openai/responses?api-version=preview"},
	} {
		d := &config.Deployment{APIBase: "https://r.openai.azure.com", Model: "my-gpt", APIVersion: tt.version, APIKey: "k"}
		req, err := NewRequest(context.Background(), d, wire.Call{Op: wire.OpResponses, Body: []byte(`{}`)})
		if err != nil || req.URL.String() != tt.want || req.Header.Get("Api-Key") != "k" {
			t.Errorf("version %q: %v %v, want %s", tt.version, req.URL, err, tt.want)
		}
	}
}
