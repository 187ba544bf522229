package otel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// httpClient is the otlptrace.Client of OTLP/HTTP with protobuf bodies,
// as otlptracehttp sends them, without otlptracehttp: its configuration
// package imports google.golang.org/grpc for the gRPC exporter's options
// (open-telemetry/opentelemetry-go#2579), which made the spend function
// link gRPC for a transport it never uses. The spans are still the SDK
// exporter's own (otlptrace's transform into tracepb.ResourceSpans); only
// the request's envelope is written here, ExportTraceServiceRequest
// { repeated ResourceSpans resource_spans = 1; }, whose generated Go type
// lives in a package that imports gRPC too.
type httpClient struct {
	endpoint string
	headers  map[string]string
	http     *http.Client
}

var _ otlptrace.Client = (*httpClient)(nil)

func (c *httpClient) Start(context.Context) error { return nil }
func (c *httpClient) Stop(context.Context) error  { return nil }

// UploadTraces posts one ExportTraceServiceRequest of spans; an answer
// other than 2xx is an error naming its status.
func (c *httpClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	var body []byte
	for _, rs := range spans {
		b, err := proto.Marshal(rs)
		if err != nil {
			return fmt.Errorf("otlp: %w", err)
		}
		body = protowire.AppendTag(body, 1, protowire.BytesType)
		body = protowire.AppendBytes(body, b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return errors.New("otlp: the endpoint is not a URL") // never echo it: it may hold a token
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "OTel-OTLP-Exporter-Go/"+otlptrace.Version())
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return fmt.Errorf("otlp export: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp export: %s", resp.Status)
	}
	return nil
}
