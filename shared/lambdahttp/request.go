package lambdahttp

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

type eventContextKey struct{}

// EventFromContext returns the function URL event that a request came from.
func EventFromContext(ctx context.Context) (*events.LambdaFunctionURLRequest, bool) {
	ev, ok := ctx.Value(eventContextKey{}).(*events.LambdaFunctionURLRequest)
	return ev, ok
}

// newRequest turns a function URL event into the server-side *http.Request
// that net/http would have built for the same call.
func newRequest(ctx context.Context, ev *events.LambdaFunctionURLRequest) (*http.Request, error) {
	if ev == nil || ev.RequestContext.HTTP.Method == "" {
		return nil, errors.New("lambdahttp: event is not a function URL request (requestContext.http.method is empty)")
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil, fmt.Errorf("lambdahttp: decode base64 body: %w", err)
		}
		body = b
	}
	path := ev.RawPath
	if path == "" {
		path = ev.RequestContext.HTTP.Path
	}
	if path == "" {
		path = "/"
	}
	requestURI := path
	if ev.RawQueryString != "" {
		requestURI += "?" + ev.RawQueryString
	}
	u, err := url.ParseRequestURI(requestURI)
	if err != nil {
		return nil, fmt.Errorf("lambdahttp: request path %q: %w", requestURI, err)
	}
	host := ev.RequestContext.DomainName
	if host == "" {
		host = ev.Headers["host"]
	}
	ctx = context.WithValue(ctx, eventContextKey{}, ev)
	r, err := http.NewRequestWithContext(ctx, ev.RequestContext.HTTP.Method, requestURI, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("lambdahttp: build request: %w", err)
	}
	// Server-side requests carry the raw request URI and a relative URL, as
	// net/http's server builds them.
	r.URL = u
	r.RequestURI = requestURI
	r.Host = host
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	r.RemoteAddr = ev.RequestContext.HTTP.SourceIP
	r.ContentLength = int64(len(body))
	if len(body) == 0 {
		r.Body = http.NoBody
	}
	r.Header = make(http.Header, len(ev.Headers)+1)
	for k, v := range ev.Headers {
		// Function URLs join repeated headers with commas, as HTTP allows.
		r.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	if len(ev.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	return r, nil
}
