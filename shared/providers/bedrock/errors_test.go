package bedrock

import (
	"testing"

	"github.com/aws/smithy-go"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

// Bedrock's missing model is the deployment's fault, unless the deployment
// is a wildcard one, whose model the request chose (apierr.Error.Own).
func TestClassifyResourceNotFound(t *testing.T) {
	err := &smithy.GenericAPIError{Code: "ResourceNotFoundException", Message: "Model not found."}
	for model, own := range map[string]bool{"anthropic.claude-3-haiku-20240307-v1:0": false, "*": true} {
		e := apierr.From(Classify(&config.Deployment{ID: "b1", Model: model}, err))
		if e.Kind != apierr.UpstreamNotFound || e.Own != own {
			t.Errorf("model %s: Kind %v Own %v, want not_found Own %v", model, e.Kind, e.Own, own)
		}
	}
}
