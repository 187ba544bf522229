package anthropic

import (
	"net/http"

	"github.com/sluice-gw/sluice/shared/catalog"
)

// Errors are Anthropic's words for what its statuses do not say: a prompt
// over the context window is a 400 like any other, and an overloaded API
// answers 529 (or overloaded_error inside a stream); a model that does not
// exist is a not_found_error whose message names it ("model: claude-x").
var Errors = catalog.ErrorWords{
	ContextWindow: catalog.Signal{Phrases: []string{"prompt is too long"}},
	Overloaded:    catalog.Signal{Statuses: []int{529}, Types: []string{"overloaded_error"}},
	ModelMissing:  catalog.Signal{Phrases: []string{"model: "}},
}

// ErrorStatus is the HTTP status an Anthropic error type stands for (for an
// error that arrives inside a 200 stream).
func ErrorStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "overloaded_error":
		return 529
	default: // api_error
		return http.StatusInternalServerError
	}
}
