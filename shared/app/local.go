package app

import (
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/shared/gateway"
)

// LocalLimits bound what one local-mode instance accepts from slow or huge
// clients. A zero field is no bound (Go's 1 MB for MaxHeaderBytes).
//
// Lambda needs none of them: an instance serves one request at a time, the
// function URL receives the whole request before the function runs and
// bounds its headers and body, and the invocation has its own deadline.
type LocalLimits struct {
	// ReadHeaderTimeout closes a connection whose request headers are not
	// all in within it (a slowloris); no response is sent.
	ReadHeaderTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers; above it net/http
	// answers 431 Request Header Fields Too Large (plain text) and closes.
	MaxHeaderBytes int
	// BodyTimeout bounds the time to receive a request's body once its
	// headers are in: a 408 request_timeout (gateway.BodyTimeout). A long
	// response (a stream) is not bounded by it.
	BodyTimeout time.Duration
	// MaxStreams bounds the streamed completions served at once; MaxRequests
	// bounds every request in flight (streams included, /health* excepted).
	// Above either: a 503 with Retry-After naming the setting.
	MaxStreams  int
	MaxRequests int
	// IdleTimeout closes a keep-alive connection idle that long.
	IdleTimeout time.Duration
}

// DefaultLocalLimits are local mode's defaults: generous for real clients,
// finite for the rest.
func DefaultLocalLimits() LocalLimits {
	return LocalLimits{
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BodyTimeout:       60 * time.Second,
		MaxStreams:        1000,
		IdleTimeout:       120 * time.Second,
	}
}

// Server is the local-mode HTTP server of the gateway and the admin API,
// bounded by Settings.Local. It sets no ReadTimeout or WriteTimeout: those
// would end long streams.
func (g *Gateway) Server() *http.Server {
	l := g.local
	h := gateway.BodyTimeout(g.HTTP, l.BodyTimeout)
	h = gateway.LimitRequests(h, l.MaxRequests)
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		IdleTimeout:       l.IdleTimeout,
	}
}
