// Package apierr is the gateway's closed vocabulary of errors and the one place
// where an error becomes an HTTP status and an OpenAI-shaped JSON body.
//
// Every error a client can see is an *Error with a Kind. Kinds are grouped by
// who is at fault: the caller (bad request, auth, unknown model), policy (rate
// limits, budgets), the provider (upstream failures), and the gateway itself.
package apierr

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Kind classifies an error. The set is closed: add a Kind here, never ad hoc.
type Kind uint8

const (
	// Internal is a bug or an unexpected failure inside the gateway.
	Internal Kind = iota
	// Caller errors.
	InvalidRequest   // malformed JSON or parameters
	Unauthorized     // missing or wrong key
	Forbidden        // key may not use this model or route
	ModelNotFound    // no such model or alias
	NotFound         // no such route
	MethodNotAllowed // wrong HTTP method
	TooLarge         // request body over the limit
	NotImplemented   // provider or endpoint not implemented
	// Policy errors.
	RateLimited    // RPM/TPM limit or every deployment cooling down
	BudgetExceeded // key or team over budget
	// Provider errors: an upstream attempt failed. These are also the router's
	// failure classes.
	UpstreamRateLimited   // 429 from the provider
	UpstreamTimeout       // no answer (or no first chunk) in time
	UpstreamConnection    // connection refused, reset, DNS
	UpstreamServer        // 5xx from the provider
	UpstreamBadRequest    // 400/422 from the provider
	UpstreamAuth          // 401/403 from the provider: the deployment's key is wrong
	UpstreamNotFound      // 404 from the provider: wrong deployment name or base URL
	ContextWindowExceeded // prompt longer than the model's context window
	ContentPolicy         // the provider refused the content
	StreamBroken          // the stream broke after content reached the client
	Unavailable           // the gateway cannot serve (e.g. its store is down)
	Conflict              // the record exists already (admin API: a taken user_id)
	kindCount
)

var kindInfo = [kindCount]struct {
	name   string // the error's "type" and the class name in logs
	status int
	code   string
}{
	Internal:              {"server_error", http.StatusInternalServerError, "internal_error"},
	InvalidRequest:        {"invalid_request_error", http.StatusBadRequest, "invalid_request"},
	Unauthorized:          {"authentication_error", http.StatusUnauthorized, "invalid_api_key"},
	Forbidden:             {"permission_error", http.StatusForbidden, "model_not_allowed"},
	ModelNotFound:         {"invalid_request_error", http.StatusNotFound, "model_not_found"},
	NotFound:              {"invalid_request_error", http.StatusNotFound, "not_found"},
	MethodNotAllowed:      {"invalid_request_error", http.StatusMethodNotAllowed, "method_not_allowed"},
	TooLarge:              {"invalid_request_error", http.StatusRequestEntityTooLarge, "request_too_large"},
	NotImplemented:        {"invalid_request_error", http.StatusNotImplemented, "not_implemented"},
	RateLimited:           {"rate_limit_error", http.StatusTooManyRequests, "rate_limit_exceeded"},
	BudgetExceeded:        {"budget_exceeded", http.StatusBadRequest, "budget_exceeded"},
	UpstreamRateLimited:   {"rate_limit_error", http.StatusTooManyRequests, "upstream_rate_limited"},
	UpstreamTimeout:       {"timeout_error", http.StatusGatewayTimeout, "upstream_timeout"},
	UpstreamConnection:    {"api_connection_error", http.StatusBadGateway, "upstream_connection_error"},
	UpstreamServer:        {"api_error", http.StatusBadGateway, "upstream_server_error"},
	UpstreamBadRequest:    {"invalid_request_error", http.StatusBadRequest, "upstream_bad_request"},
	UpstreamAuth:          {"api_error", http.StatusBadGateway, "upstream_auth_error"},
	UpstreamNotFound:      {"api_error", http.StatusBadGateway, "upstream_not_found"},
	ContextWindowExceeded: {"invalid_request_error", http.StatusBadRequest, "context_length_exceeded"},
	ContentPolicy:         {"invalid_request_error", http.StatusBadRequest, "content_policy_violation"},
	StreamBroken:          {"api_error", http.StatusBadGateway, "stream_broken"},
	Unavailable:           {"api_error", http.StatusServiceUnavailable, "service_unavailable"},
	Conflict:              {"invalid_request_error", http.StatusConflict, "conflict"},
}

// String is the kind's class name, as logged.
func (k Kind) String() string {
	if k >= kindCount {
		return "unknown"
	}
	switch k {
	case UpstreamRateLimited:
		return "rate_limited"
	case UpstreamTimeout:
		return "timeout"
	case UpstreamConnection:
		return "connection_error"
	case UpstreamServer:
		return "server_error"
	case UpstreamBadRequest:
		return "bad_request"
	case UpstreamAuth:
		return "auth"
	case UpstreamNotFound:
		return "not_found"
	case ContextWindowExceeded:
		return "context_window_exceeded"
	case ContentPolicy:
		return "content_policy"
	case StreamBroken:
		return "stream_broken"
	}
	return kindInfo[k].code
}

// Status is the HTTP status a client sees for the kind.
func (k Kind) Status() int {
	if k >= kindCount {
		return http.StatusInternalServerError
	}
	return kindInfo[k].status
}

// Error is an error a client may see.
type Error struct {
	Kind       Kind
	Message    string        // safe to show the client: never a provider key
	Param      string        // the offending request parameter, if any
	Code       string        // overrides the kind's default code
	Status     int           // overrides the kind's status (e.g. an upstream 503 stays 503)
	RetryAfter time.Duration // sent as Retry-After when positive
	Cause      error         // for logs; never shown to the client
	// Own: an upstream failure the request brought about itself (a 404
	// for a route, or a wildcard deployment's model, the request chose),
	// not the deployment's fault: the router retries and falls back as
	// for any failure, but never holds it against the deployment.
	Own bool
}

// New returns an *Error of kind k with a formatted message.
func New(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Kind.String() + ": " + e.Message + ": " + e.Cause.Error()
	}
	return e.Kind.String() + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// HTTPStatus is the status the client sees.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	return e.Kind.Status()
}

// From returns err as an *Error, wrapping anything else as Internal.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: Internal, Message: "internal error", Cause: err}
}

// KindOf returns the kind of err (Internal for foreign errors).
func KindOf(err error) Kind { return From(err).Kind }

type body struct {
	Error payload `json:"error"`
}

type payload struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// JSON is the OpenAI-shaped body of err: {"error":{"message","type","param","code"}}.
func JSON(err error) []byte {
	e := From(err)
	k := e.Kind
	if k >= kindCount {
		k = Internal
	}
	p := payload{Message: e.Message, Type: kindInfo[k].name, Code: kindInfo[k].code}
	if e.Code != "" {
		p.Code = e.Code
	}
	if e.Param != "" {
		p.Param = &e.Param
	}
	b, mErr := json.Marshal(body{Error: p})
	if mErr != nil { // cannot happen with these types
		return []byte(`{"error":{"message":"internal error","type":"server_error","param":null,"code":"internal_error"}}`)
	}
	return b
}

// Write sends err as an OpenAI-style JSON error with its status and, for
// rate limits, Retry-After in whole seconds (rounded up; at least 1 on a 429).
func Write(w http.ResponseWriter, err error) {
	e := From(err)
	writeJSON(w, e.HTTPStatus(), e.RetryAfter, e.HTTPStatus() == http.StatusTooManyRequests, JSON(e))
}

// writeJSON sends an error body with its status and Retry-After: ra in
// whole seconds (rounded up), at least 1 when busy (a rate limit or an
// overload) gives none.
func writeJSON(w http.ResponseWriter, status int, ra time.Duration, busy bool, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if ra <= 0 && busy {
		ra = time.Second
	}
	if ra > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64(ra/time.Second)+min(int64(ra%time.Second), 1), 10)) // ceil without overflow
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// SSE is err as one server-sent event, for errors after a stream started.
func SSE(err error) []byte { return sseEvent("data: ", JSON(err)) }

// sseEvent is body as a server-sent event after its fields' prefix.
func sseEvent(prefix string, body []byte) []byte {
	out := make([]byte, 0, len(prefix)+len(body)+2)
	out = append(out, prefix...)
	out = append(out, body...)
	return append(out, "\n\n"...)
}
