package apierr

import (
	"errors"
	"net"
	"net/http"
)

// BodyRead is the error for a request body that could not be read: a 408
// (code request_timeout) when the read hit the connection's read deadline,
// which local mode sets for the body (the client sends it too slowly);
// otherwise a 400. The cause is kept for logs, never shown.
func BodyRead(err error) *Error {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return &Error{
			Kind: InvalidRequest, Status: http.StatusRequestTimeout, Code: "request_timeout",
			Message: "the request body did not arrive in time: send it faster, or raise the gateway's body timeout (GATEWAY_BODY_TIMEOUT)",
			Cause:   err,
		}
	}
	return &Error{Kind: InvalidRequest, Message: "could not read the request body", Cause: err}
}
