package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// Bounds on what one local-mode instance accepts from its clients. Lambda
// needs none of them: an instance serves one request at a time, and the
// function URL bounds the headers and the body before the function runs.

// gate bounds concurrent holders with one atomic counter; a nil *gate
// admits everything.
type gate struct {
	n       atomic.Int64
	max     int64
	refusal *apierr.Error // the error above the bound, built once
}

func newGate(max int, what, setting string) *gate {
	if max <= 0 {
		return nil
	}
	return &gate{max: int64(max), refusal: &apierr.Error{
		Kind: apierr.Unavailable, Code: "too_many_" + strings.ReplaceAll(what, " ", "_"), RetryAfter: time.Second,
		Message: "this gateway instance is serving its maximum of " + strconv.Itoa(max) + " concurrent " + what +
			" (" + setting + "); retry shortly, or raise " + setting,
	}}
}

// acquire takes a place; false when all are taken.
func (g *gate) acquire() bool {
	if g.n.Add(1) > g.max {
		g.n.Add(-1)
		return false
	}
	return true
}

func (g *gate) release() { g.n.Add(-1) }

// LimitRequests bounds the requests one instance serves at once (every
// route but /health*, which a busy instance still answers); above max a
// request gets a 503 with Retry-After naming GATEWAY_MAX_REQUESTS. max <= 0:
// next itself.
func LimitRequests(next http.Handler, max int) http.Handler {
	g := newGate(max, "requests", "GATEWAY_MAX_REQUESTS")
	if g == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/health") {
			next.ServeHTTP(w, r)
			return
		}
		if !g.acquire() {
			apierr.Write(w, g.refusal)
			return
		}
		defer g.release()
		next.ServeHTTP(w, r)
	})
}

// BodyTimeout bounds the time a client takes to send a request's body,
// from the moment its handler starts: a body still arriving then fails to
// read, which the gateway and the admin API answer with a 408
// (request_timeout, apierr.BodyRead). It sets the connection's read
// deadline, so it needs a net/http server (http.ResponseController);
// net/http clears that deadline itself once the body has been read to its
// end (to watch for the client going away), so a long stream is never cut.
// Requests without a body are untouched. d <= 0: next itself.
//
// It is not http.Server.ReadTimeout, which would also bound the time a
// handler may take before its next read and so end long streams.
func BodyTimeout(next http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		next.ServeHTTP(w, r)
	})
}
