package appenv

import (
	"fmt"
	"strconv"
	"time"
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

// localLimits are local mode's client bounds: the defaults, overridden by
// the environment (the flags override both).
func localLimits(get func(string) string, lookup func(string) (string, bool)) (LocalLimits, error) {
	l := DefaultLocalLimits()
	var err error
	for _, d := range []struct {
		name string
		v    *time.Duration
	}{{"GATEWAY_READ_HEADER_TIMEOUT", &l.ReadHeaderTimeout}, {"GATEWAY_BODY_TIMEOUT", &l.BodyTimeout}} {
		if _, set := lookup(d.name); set {
			if *d.v, err = duration(get, d.name); err != nil {
				return l, err
			}
		}
	}
	for _, n := range []struct {
		name string
		v    *int
	}{{"GATEWAY_MAX_HEADER_BYTES", &l.MaxHeaderBytes}, {"GATEWAY_MAX_STREAMS", &l.MaxStreams}, {"GATEWAY_MAX_REQUESTS", &l.MaxRequests}} {
		if v, set := lookup(n.name); set {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				return l, fmt.Errorf("%s=%q: want a whole number, 0 for no bound", n.name, v)
			}
			*n.v = i
		}
	}
	return l, nil
}
