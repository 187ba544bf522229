// Package webhook is the generic_api callback (LiteLLM's generic API
// logger, also named "webhook" here): one JSON POST per consumer batch to
// GENERIC_LOGGER_ENDPOINT, a JSON array of LiteLLM's
// StandardLoggingPayload (callbacks.Payload), one per call, with the
// headers of GENERIC_LOGGER_HEADERS ("Name=value,Name2=value2"). A
// redelivered batch is posted again: the receiver dedupes on each
// payload's "id" (the call id).
package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/shared/callbacks"
)

// Sink posts batches to one endpoint.
type Sink struct {
	endpoint string
	headers  http.Header
	client   *http.Client
}

// New is the callbacks.Factory: the endpoint from the callback's params
// (endpoint, generic_logger_endpoint) or GENERIC_LOGGER_ENDPOINT, the
// headers from params (headers, generic_logger_headers) or
// GENERIC_LOGGER_HEADERS.
func New(_ context.Context, env callbacks.Env) (callbacks.Sink, error) {
	ep := cmp.Or(env.Var("endpoint", ""), env.Var("generic_logger_endpoint", "GENERIC_LOGGER_ENDPOINT"))
	if ep == "" {
		return nil, errors.New("GENERIC_LOGGER_ENDPOINT is not set")
	}
	if callbacks.HTTPURL(ep) == nil {
		return nil, errors.New("GENERIC_LOGGER_ENDPOINT is not an http(s) URL") // never echo it: it may hold a token
	}
	h, err := ParseHeaders(cmp.Or(env.Var("headers", ""), env.Var("generic_logger_headers", "GENERIC_LOGGER_HEADERS")))
	if err != nil {
		return nil, err
	}
	return &Sink{endpoint: ep, headers: h, client: env.Client()}, nil
}

// ParseHeaders reads "Name=value,Name2=value2" (a JSON object is read
// too: callback_vars may hold one).
func ParseHeaders(s string) (http.Header, error) {
	h := http.Header{}
	s = strings.TrimSpace(s)
	if s == "" {
		return h, nil
	}
	if strings.HasPrefix(s, "{") {
		var m map[string]string
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return nil, errors.New("GENERIC_LOGGER_HEADERS: not a JSON object of strings")
		}
		for k, v := range m {
			h.Set(k, v)
		}
		return h, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("GENERIC_LOGGER_HEADERS: want Name=value pairs separated by commas")
		}
		h.Set(k, strings.TrimSpace(v))
	}
	return h, nil
}

// Send implements callbacks.Sink: one POST of recs' payloads.
func (s *Sink) Send(ctx context.Context, recs []callbacks.Record) error {
	ps := make([]callbacks.Payload, len(recs))
	for i := range recs {
		ps[i] = callbacks.NewPayload(&recs[i])
	}
	body, err := json.Marshal(ps)
	if err != nil {
		return callbacks.Permanent(err)
	}
	_, err = callbacks.PostJSON(ctx, s.client, "generic_api", s.endpoint, body, func(r *http.Request) {
		for k, v := range s.headers {
			r.Header[k] = v
		}
	})
	return err
}
