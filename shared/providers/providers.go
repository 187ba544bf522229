// Package providers sends one attempt to one deployment and turns the
// provider's failures into the gateway's error vocabulary.
//
// Each protocol's package (a Vendor) produces a plain *http.Response, so
// the gateway copies bodies and streams the same way whatever the provider:
// OpenAI-compatible servers and Azure through the shared keep-alive client,
// Anthropic and Bedrock translated to OpenAI's shapes, the mock in-process.
// The Dispatcher finds a deployment's vendor by its protocol (a table index,
// set when the config was loaded); catalog lists the prefixes of each.
package providers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/catalog"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/h1"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Dispatcher sends calls to deployments by their protocol.
type Dispatcher struct {
	vendors [catalog.Protocols]Vendor // nil: not implemented
}

// New returns a Dispatcher over client. The client must not set Timeout
// (it would cut long streams): deadlines come from each call's context.
func New(client *http.Client) *Dispatcher {
	return &Dispatcher{vendors: vendors(client)}
}

// NewHTTPClient returns the shared keep-alive client for upstream calls.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	t.ResponseHeaderTimeout = 0 // per-attempt deadlines come from the context
	t.ForceAttemptHTTP2 = true
	// 4 KB (the default) takes a read system call per few stream events
	// and a write per 4 KB of a request; chat requests run to tens of KB,
	// and an upstream's burst of events is read at once.
	t.ReadBufferSize, t.WriteBufferSize = 32<<10, 32<<10
	// A new connection to a host already met resumes its TLS session: no
	// certificate chain to send and verify, no key exchange signature. Idle
	// connections close (the provider's keep-alive timeout, a Lambda
	// instance frozen between bursts), and a full handshake is ~1 ms of CPU,
	// ~6 ms at 256 MB.
	t.TLSClientConfig = &tls.Config{ClientSessionCache: tls.NewLRUClientSessionCache(256)}
	// http:// upstreams (model servers in the same network) without a
	// proxy are served on the caller's goroutine (package h1); https and
	// proxied ones by t, over HTTP/2 where the server offers it.
	return &http.Client{Transport: h1.NewTransport(t)}
}

// Do sends call to d. A non-nil response has status 2xx and a body the caller
// must close; every failure is an *apierr.Error of an upstream kind.
func (p *Dispatcher) Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	v := p.vendors[catalog.Mock] // mock_response answers in place of any provider
	if d.MockResponse == nil {
		v = p.vendor(d)
	}
	if v == nil {
		return nil, apierr.New(apierr.NotImplemented, "provider %q is not implemented yet", d.Provider)
	}
	if call.Op == wire.OpMessages || call.Op == wire.OpCountTokens { // messages.go
		resp, err := messagesDo(ctx, v, d, call)
		return check(ctx, d, resp, err)
	}
	if err := unsupported(d, call.Op); err != nil { // ops.go
		return nil, err
	}
	if call.Op == wire.OpChat && d.Provider == textCompletionOpenAI && d.MockResponse == nil {
		return chatAsCompletion(ctx, v, d, call) // textcompletion.go
	}
	resp, err := v.Do(ctx, d, call)
	return check(ctx, d, resp, err)
}

func (p *Dispatcher) vendor(d *config.Deployment) Vendor {
	if int(d.Protocol) < len(p.vendors) {
		return p.vendors[d.Protocol]
	}
	return nil
}

// StreamUsage says whether a stream to d may be asked for its usage even
// when the client did not ask (to account tokens); the extra chunk is not
// forwarded.
func StreamUsage(d *config.Deployment) bool {
	v := capabilities.vendor(d)
	return v != nil && v.StreamUsage(d)
}

// capabilities answers StreamUsage, which the gateway asks without a
// Dispatcher at hand; what a vendor can do does not depend on its client.
var capabilities = New(nil)

func check(ctx context.Context, d *config.Deployment, resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		return nil, TransportError(ctx, d, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, StatusError(d, resp)
}

// TransportError classifies a failure to get a response at all.
func TransportError(ctx context.Context, d *config.Deployment, err error) *apierr.Error {
	var e *apierr.Error
	if errors.As(err, &e) {
		// A provider's own error (Bedrock's, from the SDK) may quote what
		// the request carried, its session token included.
		if m := Redact(e.Message, d); m != e.Message {
			c := *e
			c.Message = m
			return &c
		}
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) || isTimeout(err) {
		return &apierr.Error{Kind: apierr.UpstreamTimeout, Message: fmt.Sprintf("deployment %s timed out", d.ID), Cause: err}
	}
	return &apierr.Error{Kind: apierr.UpstreamConnection, Message: fmt.Sprintf("could not reach deployment %s", d.ID), Cause: err}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
