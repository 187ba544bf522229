package apierr

import (
	"encoding/json"
	"net/http"
)

// Anthropic's error shape, for the routes of its Messages API: the same
// kinds, told as Anthropic tells them ({"type":"error","error":{"type",
// "message"}}, with Anthropic's types and statuses), so that its SDKs and
// Claude Code raise the right exception and retry what they retry (429,
// 529 overloaded, 5xx).

// StatusOverloaded is Anthropic's status for an overloaded API.
const StatusOverloaded = 529

// Anthropic returns the Anthropic error type and status of err.
func Anthropic(err error) (typ string, status int) {
	e := From(err)
	status = e.HTTPStatus()
	switch e.Kind {
	case InvalidRequest, MethodNotAllowed, UpstreamBadRequest, ContextWindowExceeded, ContentPolicy, Conflict:
		return "invalid_request_error", status
	case Unauthorized:
		return "authentication_error", status
	case Forbidden:
		return "permission_error", status
	case ModelNotFound, NotFound:
		return "not_found_error", status
	case TooLarge:
		return "request_too_large", status
	case RateLimited, UpstreamRateLimited:
		return "rate_limit_error", status
	case BudgetExceeded:
		return "billing_error", status
	case UpstreamTimeout:
		return "timeout_error", status
	case Unavailable:
		return "overloaded_error", StatusOverloaded
	case UpstreamServer:
		if status == http.StatusServiceUnavailable { // an overloaded or unavailable provider
			return "overloaded_error", StatusOverloaded
		}
	}
	if status == http.StatusInternalServerError || e.Kind >= kindCount {
		return "api_error", http.StatusInternalServerError
	}
	return "api_error", status
}

type anthropicBody struct {
	Type  string           `json:"type"`
	Error anthropicPayload `json:"error"`
}

type anthropicPayload struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// AnthropicJSON is the Anthropic-shaped body of err.
func AnthropicJSON(err error) []byte {
	typ, _ := Anthropic(err)
	b, _ := json.Marshal(anthropicBody{Type: "error", Error: anthropicPayload{Type: typ, Message: From(err).Message}})
	return b
}

// WriteAnthropic sends err as Anthropic does: its status and body, and
// Retry-After (whole seconds, at least 1) on a 429 or 529.
func WriteAnthropic(w http.ResponseWriter, err error) {
	e := From(err)
	_, status := Anthropic(e)
	writeJSON(w, status, e.RetryAfter, status == http.StatusTooManyRequests || status == StatusOverloaded, AnthropicJSON(e))
}

// AnthropicSSE is err as an Anthropic stream's error event, for errors after
// a stream started.
func AnthropicSSE(err error) []byte { return sseEvent("event: error\ndata: ", AnthropicJSON(err)) }
