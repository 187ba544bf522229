package openai

import (
	"bytes"
	"context"
	"net/http"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

// NewRequest returns the upstream request for call on deployment d.
func NewRequest(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Request, error) {
	req, err := Post(ctx, d.APIBase+call.Op.Path(), call)
	if k := d.Key(); err == nil && k != "" {
		req.Header["Authorization"] = []string{"Bearer " + k}
	}
	return req, err
}

// Post returns a POST of call's JSON body to url, asking for an event
// stream when the call streams; the caller adds its credentials.
func Post(ctx context.Context, url string, call wire.Call) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(call.Body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	if call.ContentType != "" { // a multipart form (transcriptions)
		req.Header["Content-Type"] = []string{call.ContentType}
	}
	if call.Stream {
		req.Header["Accept"] = []string{"text/event-stream"}
	}
	return req, nil
}
