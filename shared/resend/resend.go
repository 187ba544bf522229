// Package resend sends a refused request once more with new credentials:
// what the transports that renew a credential on a 401 share (secrets'
// re-read key, Vertex AI's renewed access token).
package resend

import (
	"io"
	"net/http"
)

// Clone returns a copy of req with a fresh body, for sending again; ok is
// false when its body cannot be read again (no GetBody).
func Clone(req *http.Request) (again *http.Request, ok bool) {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return nil, false
	}
	again = req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, false
		}
		again.Body = body
	}
	return again, true
}

// Discard reads a little of the refused response and closes it, so that
// its connection may serve the request sent again.
func Discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
