package azure

import (
	"net/url"

	"github.com/sluice-gw/sluice/shared/config"
)

// ResponsesAPIVersion is the api-version of Responses calls when the
// deployment's own predates the Responses API (2025-03-01-preview).
const ResponsesAPIVersion = "2025-04-01-preview"

// responsesURL is Azure's Responses endpoint: one per resource, the
// deployment named by the body's model, not the path.
func responsesURL(d *config.Deployment) string {
	version := d.APIVersion
	if version < "2025-03-01" {
		version = ResponsesAPIVersion
	}
	return d.APIBase + "/openai/responses?api-version=" + url.QueryEscape(version)
}
