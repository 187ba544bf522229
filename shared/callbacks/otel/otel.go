// Package otel is the "otel" logging callback (LiteLLM's OpenTelemetry
// integration): one span per call, exported over OTLP/HTTP (protobuf) by
// the OpenTelemetry Go SDK's exporter (otlptrace, through client.go's
// HTTP client, which keeps gRPC out), one export per consumer batch, with
// OpenTelemetry's GenAI semantic conventions (gen_ai.*) and LiteLLM's
// attributes (metadata.user_api_key_*, gen_ai.cost.total_cost).
//
// A span's trace and span ids are derived from the call id (SHA-256), and
// its start and end are the call's: a redelivered batch exports the same
// spans again, which a backend stores once (or shows as the same span).
//
// Settings, as LiteLLM reads them: OTEL_EXPORTER (otlp_http, the default
// here; http/protobuf and otlp are the same), OTEL_ENDPOINT (a base URL,
// /v1/traces added unless it is there) or the standard
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) and
// OTEL_EXPORTER_OTLP_ENDPOINT (a base URL), OTEL_HEADERS or
// OTEL_EXPORTER_OTLP_HEADERS ("name=value,name2=value2"), OTEL_SERVICE_NAME
// (default "litellm").
package otel

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-gw/sluice/shared/callbacks"
)

// SpanName is LiteLLM's name of a call's span.
const SpanName = "litellm_request"

// Sink exports the spans of each batch.
type Sink struct {
	exporter *otlptrace.Exporter
	tp       *sdktrace.TracerProvider
	tracer   trace.Tracer
	spans    *collector
}

// New is the callbacks.Factory of "otel".
func New(ctx context.Context, env callbacks.Env) (callbacks.Sink, error) {
	switch exp := strings.ToLower(strings.TrimSpace(env.Var("exporter", "OTEL_EXPORTER"))); exp {
	case "", "otlp_http", "otlp", "http/protobuf", "http":
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER=%q: only otlp_http (OTLP over HTTP, protobuf) is supported", exp)
	}
	endpoint, err := Endpoint(env)
	if err != nil {
		return nil, err
	}
	h, err := ParseHeaders(cmp.Or(env.Var("headers", "OTEL_HEADERS"), env.Var("", "OTEL_EXPORTER_OTLP_HEADERS")))
	if err != nil {
		return nil, err
	}
	// One attempt: the dispatcher retries a failed batch, then the queue
	// redelivers it (an exporter's own retries would only hold it longer).
	client := &httpClient{endpoint: endpoint, headers: h, http: env.HTTP}
	if client.http == nil {
		client.http = &http.Client{Timeout: 10 * time.Second}
	}
	exporter, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("otel exporter: %w", err)
	}
	service := env.Var("service_name", "OTEL_SERVICE_NAME")
	if service == "" {
		service = "litellm"
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(service))
	c := &collector{}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(callIDs{}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(c),
	)
	return &Sink{exporter: exporter, tp: tp, tracer: tp.Tracer("litellm"), spans: c}, nil
}

// Endpoint is the traces URL env names (see the package doc).
func Endpoint(env callbacks.Env) (string, error) {
	ep, full := env.Var("", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), true
	if ep == "" {
		ep, full = env.Var("endpoint", "OTEL_ENDPOINT"), false
	}
	if ep == "" {
		ep = env.Var("", "OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if ep == "" {
		return "", errors.New("otel: OTEL_ENDPOINT (or OTEL_EXPORTER_OTLP_ENDPOINT) is not set")
	}
	u := callbacks.HTTPURL(strings.TrimSpace(ep))
	if u == nil {
		return "", errors.New("otel: the OTLP endpoint is not an http(s) URL") // never echo it: it may hold a token
	}
	if !full && !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1/traces") {
		u.Path = strings.TrimRight(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

// ParseHeaders reads OTEL_HEADERS: "name=value,name2=value2", values
// URL-encoded as the OpenTelemetry specification writes them.
func ParseHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, errors.New("otel: OTEL_HEADERS: want name=value pairs separated by commas")
		}
		if dv, err := url.QueryUnescape(strings.TrimSpace(v)); err == nil {
			v = dv
		}
		h[k] = strings.TrimSpace(v)
	}
	return h, nil
}

// Send implements callbacks.Sink: the batch's spans in one export.
func (s *Sink) Send(ctx context.Context, recs []callbacks.Record) error {
	spans := make([]sdktrace.ReadOnlySpan, 0, len(recs))
	seen := make(map[string]bool, len(recs))
	for i := range recs {
		if seen[recs[i].CallID] {
			continue // one span per call
		}
		seen[recs[i].CallID] = true
		if sp := s.span(&recs[i]); sp != nil {
			spans = append(spans, sp)
		}
	}
	if err := s.exporter.ExportSpans(ctx, spans); err != nil {
		return fmt.Errorf("otel: %w", err)
	}
	return nil
}

// span builds r's span with the SDK (ids from the call id) and returns it
// as ended.
func (s *Sink) span(r *callbacks.Record) sdktrace.ReadOnlySpan {
	ctx := context.WithValue(context.Background(), callIDKey{}, r.CallID)
	_, sp := s.tracer.Start(ctx, SpanName, trace.WithTimestamp(r.Start), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(Attributes(r)...))
	if !r.Success() {
		msg := r.Error
		if msg == "" {
			msg = string(r.Status)
		}
		sp.SetStatus(codes.Error, msg)
	} else {
		sp.SetStatus(codes.Ok, "")
	}
	sp.End(trace.WithTimestamp(r.End))
	return s.spans.take(sp.SpanContext().SpanID())
}

// Attributes are r's span attributes: GenAI semantic conventions, then
// LiteLLM's metadata attributes (those the record has).
func Attributes(r *callbacks.Record) []attribute.KeyValue {
	a := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", operation(r.CallType)),
		attribute.String("gen_ai.system", r.Provider),
		attribute.String("gen_ai.provider.name", r.Provider),
		attribute.String("gen_ai.request.model", r.ModelGroup),
		attribute.String("gen_ai.response.model", r.Model),
		attribute.Int64("gen_ai.usage.input_tokens", r.PromptTokens),
		attribute.Int64("gen_ai.usage.output_tokens", r.CompletionTokens),
		attribute.Int64("gen_ai.usage.total_tokens", r.TotalTokens()),
		attribute.String("gen_ai.response.id", r.CallID),
		attribute.Bool("llm.is_streaming", r.Stream),
		attribute.String("llm.request.type", r.CallType),
	}
	if r.CachedTokens > 0 {
		a = append(a, attribute.Int64("gen_ai.usage.cache_read_input_tokens", r.CachedTokens))
	}
	if r.CostKnown {
		a = append(a, attribute.Float64("gen_ai.cost.total_cost", r.Cost()))
	}
	if r.StatusCode != 0 {
		a = append(a, attribute.Int("http.response.status_code", r.StatusCode))
	}
	if !r.CompletionStart.IsZero() {
		a = append(a, attribute.Float64("gen_ai.server.time_to_first_token", r.CompletionStart.Sub(r.Start).Seconds()))
	}
	if !r.Success() {
		a = append(a, attribute.String("error.type", errorType(r)))
		if r.Error != "" {
			a = append(a, attribute.String("error.message", r.Error))
		}
	}
	for _, kv := range [...]struct{ k, v string }{
		{"metadata.user_api_key_hash", r.KeyHash},
		{"metadata.user_api_key_alias", r.KeyAlias},
		{"metadata.user_api_key_team_id", r.TeamID},
		{"metadata.user_api_key_user_id", r.UserID},
		{"metadata.user_api_key_org_id", r.OrganizationID},
		{"metadata.user_api_key_end_user_id", r.EndUser},
		{"metadata.model_group", r.ModelGroup},
		{"metadata.model_id", r.DeploymentID},
		{"metadata.api_base", r.APIBase},
		{"litellm.call_id", r.CallID},
	} {
		if kv.v != "" {
			a = append(a, attribute.String(kv.k, kv.v))
		}
	}
	if len(r.Tags) > 0 {
		a = append(a, attribute.StringSlice("metadata.tags", r.Tags))
	}
	return a
}

// operation is the gen_ai.operation.name of a call type.
func operation(callType string) string {
	switch callType {
	case "chat", "completion", "acompletion", "messages", "responses":
		return "chat"
	case "text_completion", "completions":
		return "text_completion"
	case "embeddings", "embedding":
		return "embeddings"
	case "":
		return "chat"
	}
	return callType
}

func errorType(r *callbacks.Record) string {
	if r.StatusCode != 0 {
		return fmt.Sprint(r.StatusCode)
	}
	return string(r.Status)
}

// callIDKey carries a call id to the id generator.
type callIDKey struct{}

// callIDs derives a span's trace and span ids from its call id, so that a
// redelivered call is the same span.
type callIDs struct{}

// NewIDs implements sdktrace.IDGenerator.
func (callIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	id, _ := ctx.Value(callIDKey{}).(string)
	return TraceID(id), SpanID(id)
}

// NewSpanID implements sdktrace.IDGenerator (no child spans are made).
func (callIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	id, _ := ctx.Value(callIDKey{}).(string)
	return SpanID(id)
}

// TraceID is the trace id of call id: the first 16 bytes of
// SHA-256("trace:" + id).
func TraceID(id string) trace.TraceID {
	h := sha256.Sum256([]byte("trace:" + id))
	var t trace.TraceID
	copy(t[:], h[:16])
	return t
}

// SpanID is the span id of call id: the first 8 bytes of
// SHA-256("span:" + id).
func SpanID(id string) trace.SpanID {
	h := sha256.Sum256([]byte("span:" + id))
	var s trace.SpanID
	copy(s[:], h[:8])
	return s
}

// collector is the span processor that hands each ended span back to Send
// (which exports them itself, to get the export's error).
type collector struct {
	mu    sync.Mutex
	ended map[trace.SpanID]sdktrace.ReadOnlySpan
}

func (c *collector) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (c *collector) OnEnd(s sdktrace.ReadOnlySpan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended == nil {
		c.ended = map[trace.SpanID]sdktrace.ReadOnlySpan{}
	}
	c.ended[s.SpanContext().SpanID()] = s
}

func (c *collector) take(id trace.SpanID) sdktrace.ReadOnlySpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.ended[id]
	delete(c.ended, id)
	return s
}

func (c *collector) Shutdown(context.Context) error   { return nil }
func (c *collector) ForceFlush(context.Context) error { return nil }
