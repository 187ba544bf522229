package azure

import "github.com/sluice-gw/sluice/shared/catalog"

// Errors are Azure's words for a refusal by its content filter (code
// content_filter, or innererror.code ResponsibleAIPolicyViolation), and for
// a deployment name that does not exist.
var Errors = catalog.ErrorWords{
	ContentPolicy: catalog.Signal{
		Codes:   []string{"content_filter"},
		Phrases: []string{"content_filter", "responsibleaipolicyviolation", "content management policy"},
	},
	ModelMissing: catalog.Signal{Codes: []string{"DeploymentNotFound"}},
}
