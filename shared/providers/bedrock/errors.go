package bedrock

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

// Classify turns a Bedrock error into the gateway's vocabulary. Errors that
// are not Bedrock's (transport, deadlines) are returned as they are.
func Classify(d *config.Deployment, err error) error {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return err
	}
	code, msg := ae.ErrorCode(), ae.ErrorMessage()
	status := 0
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	out := &apierr.Error{Message: fmt.Sprintf("%s: %s (deployment %s)", code, msg, d.ID), Cause: err}
	lower := strings.ToLower(msg)
	switch code {
	case "ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException":
		out.Kind = apierr.UpstreamRateLimited
	case "ServiceUnavailableException", "ModelNotReadyException":
		out.Kind, out.Status = apierr.UpstreamServer, http.StatusServiceUnavailable
	case "InternalServerException", "ModelErrorException", "ModelStreamErrorException":
		out.Kind = apierr.UpstreamServer
	case "ModelTimeoutException":
		out.Kind = apierr.UpstreamTimeout
	case "AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException",
		"InvalidSignatureException", "IncompleteSignature", "MissingAuthenticationToken":
		out.Kind = apierr.UpstreamAuth
	case "ResourceNotFoundException":
		out.Kind = apierr.UpstreamNotFound
		out.Own = d.Model == "*" // a wildcard deployment's model is the request's
	case "ValidationException":
		switch {
		case strings.Contains(lower, "too long") || strings.Contains(lower, "too many tokens") ||
			strings.Contains(lower, "context window") || strings.Contains(lower, "context length") ||
			strings.Contains(lower, "maximum context") || strings.Contains(lower, "exceeds the maximum"):
			out.Kind = apierr.ContextWindowExceeded
		default:
			out.Kind = apierr.UpstreamBadRequest
		}
	default:
		switch {
		case status == http.StatusTooManyRequests:
			out.Kind = apierr.UpstreamRateLimited
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			out.Kind = apierr.UpstreamAuth
		case status == http.StatusNotFound:
			out.Kind = apierr.UpstreamNotFound
		case status >= 500 || status == 0:
			out.Kind = apierr.UpstreamServer
		default:
			out.Kind = apierr.UpstreamBadRequest
		}
	}
	if strings.Contains(lower, "guardrail") || strings.Contains(lower, "content filter") {
		out.Kind = apierr.ContentPolicy
	}
	return out
}
