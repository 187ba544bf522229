package otel_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-gw/sluice/shared/callbacks"
	"github.com/sluice-gw/sluice/shared/callbacks/callbackstest"
	"github.com/sluice-gw/sluice/shared/callbacks/otel"
	"github.com/sluice-gw/sluice/shared/callbacks/sinks"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
)

// receiver is an OTLP/HTTP traces endpoint: it decodes each request's
// protobuf (ExportTraceServiceRequest) and keeps every span with its
// resource's service name; while down it answers 503.
type receiver struct {
	*httptest.Server
	down atomic.Bool

	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
	headers  []string
	exports  int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want protobuf at /v1/traces", http.StatusNotFound)
			return
		}
		if r.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		b, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.exports++
		r.headers = append(r.headers, req.Header.Get("X-Honeycomb-Team"))
		for _, rs := range msg.ResourceSpans {
			svc := str(rs.Resource.GetAttributes(), "service.name")
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					r.spans = append(r.spans, sp)
					r.services = append(r.services, svc)
				}
			}
		}
		resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	t.Cleanup(r.Close)
	return r
}

// byID returns the spans received by span id (hex), and how many in all.
func (r *receiver) byID() (map[string][]*tracepb.Span, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]*tracepb.Span{}
	for _, sp := range r.spans {
		id := hex.EncodeToString(sp.SpanId)
		out[id] = append(out[id], sp)
	}
	return out, len(r.spans)
}

func attr(kvs []*commonpb.KeyValue, k string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.Key == k {
			return kv.Value
		}
	}
	return nil
}

func str(kvs []*commonpb.KeyValue, k string) string { return attr(kvs, k).GetStringValue() }

func event(i int, st spend.Status) spend.Event {
	start := time.Date(2026, 12, 2, 7, 0, 0, 123_456_789, time.UTC).Add(time.Duration(i) * time.Second)
	e := spend.Event{Version: spend.Version, RequestID: fmt.Sprintf("call-%d-%d", time.Now().UnixNano(), i), Start: start, End: start.Add(1500 * time.Millisecond),
		Status: st, KeyHash: keys.HashSecret("sk-otel"), KeyAlias: "otel-key", TeamID: "team-a", UserID: "user-a",
		ModelGroup: "gpt-4o", Model: "gpt-4o-2024-08-06", Provider: "openai", DeploymentID: "dep-1", CallType: "chat",
		PromptTokens: int64(10 + i), CompletionTokens: int64(3 + i), Cost: 1_500_000, CostKnown: true, StatusCode: 200,
		Attempts: 1, Tags: []string{"prod"}}
	if st != spend.StatusSuccess {
		e.StatusCode, e.Error = 429, "rate limited upstream"
	}
	return e
}

// consumer is a spend consumer on a memory store delivering to the otel
// sink LiteLLM's config and environment name.
func consumer(t *testing.T, env map[string]string) *spend.Consumer {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := callbackstest.Env(env)
	e.Log = quiet
	d, err := callbacks.New(context.Background(), callbacks.Options{
		Callbacks: config.Callbacks{Both: []string{"otel"}},
		Registry:  sinks.All(),
		Env:       e,
		Attempts:  1,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := spend.NewConsumer(spend.NewMemory(keys.NewMemory()), quiet)
	c.Sinks = d
	return c
}

// TestSpansThroughConsumer: each call of a consumer batch reaches the OTLP
// receiver as one span (protobuf decoded) with the GenAI attributes,
// LiteLLM's metadata, the call's times and ids derived from the call id;
// a redelivery sends the same spans again (no new span id); while the
// receiver is down the batch fails, and its redelivery delivers it.
func TestSpansThroughConsumer(t *testing.T) {
	rcv := newReceiver(t)
	c := consumer(t, map[string]string{"OTEL_EXPORTER": "otlp_http", "OTEL_ENDPOINT": rcv.URL, "OTEL_HEADERS": "x-honeycomb-team=k%3Dv", "OTEL_SERVICE_NAME": "sluice-test"})
	ctx := context.Background()
	evs := []spend.Event{event(0, spend.StatusSuccess), event(1, spend.StatusSuccess), event(2, spend.StatusFailure)}
	for round := range 2 { // the delivery, then a redelivery
		resp, err := c.HandleSQS(ctx, spendtest.Batch(evs))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("round %d: %v, %+v", round, err, resp)
		}
	}
	got, total := rcv.byID()
	if len(got) != len(evs) || total != 2*len(evs) {
		t.Fatalf("%d distinct spans of %d received, want %d distinct, each twice", len(got), total, len(evs))
	}
	for i := range evs {
		e := &evs[i]
		tid, sid := otel.TraceID(e.RequestID), otel.SpanID(e.RequestID)
		spans := got[sid.String()]
		if len(spans) != 2 || !proto.Equal(spans[0], spans[1]) {
			t.Fatalf("call %s: %d spans with its span id, want the same span twice", e.RequestID, len(spans))
		}
		sp := spans[0]
		if hex.EncodeToString(sp.TraceId) != tid.String() || sp.Name != otel.SpanName || len(sp.ParentSpanId) != 0 {
			t.Errorf("call %s: trace %x name %q parent %x", e.RequestID, sp.TraceId, sp.Name, sp.ParentSpanId)
		}
		if sp.StartTimeUnixNano != uint64(e.Start.UnixNano()) || sp.EndTimeUnixNano != uint64(e.End.UnixNano()) {
			t.Errorf("call %s: times %d..%d, want %d..%d", e.RequestID, sp.StartTimeUnixNano, sp.EndTimeUnixNano, e.Start.UnixNano(), e.End.UnixNano())
		}
		a := sp.Attributes
		for k, want := range map[string]string{
			"gen_ai.system": "openai", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
			"gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.operation.name": "chat",
			"metadata.user_api_key_hash": e.KeyHash, "metadata.user_api_key_alias": "otel-key",
			"metadata.user_api_key_team_id": "team-a", "metadata.user_api_key_user_id": "user-a", "metadata.model_id": "dep-1",
		} {
			if v := str(a, k); v != want {
				t.Errorf("call %s: %s = %q, want %q", e.RequestID, k, v, want)
			}
		}
		if in, out := attr(a, "gen_ai.usage.input_tokens").GetIntValue(), attr(a, "gen_ai.usage.output_tokens").GetIntValue(); in != e.PromptTokens || out != e.CompletionTokens {
			t.Errorf("call %s: tokens %d/%d, want %d/%d", e.RequestID, in, out, e.PromptTokens, e.CompletionTokens)
		}
		if cost := attr(a, "gen_ai.cost.total_cost").GetDoubleValue(); cost != 0.0015 {
			t.Errorf("call %s: cost %v, want the spend log's 0.0015", e.RequestID, cost)
		}
		wantStatus := tracepb.Status_STATUS_CODE_OK
		if !e.Success() {
			wantStatus = tracepb.Status_STATUS_CODE_ERROR
			if sp.Status.GetMessage() != e.Error || str(a, "error.type") != "429" {
				t.Errorf("call %s: status message %q, error.type %q", e.RequestID, sp.Status.GetMessage(), str(a, "error.type"))
			}
		}
		if sp.Status.GetCode() != wantStatus {
			t.Errorf("call %s: status %v, want %v", e.RequestID, sp.Status.GetCode(), wantStatus)
		}
	}
	rcv.mu.Lock()
	if rcv.exports != 2 || rcv.services[0] != "sluice-test" || rcv.headers[0] != "k=v" {
		t.Errorf("%d exports (want one per batch: 2), service %q, header %q", rcv.exports, rcv.services[0], rcv.headers[0])
	}
	rcv.mu.Unlock()

	// Down: the batch fails whole; once up, its redelivery is delivered.
	more := []spend.Event{event(3, spend.StatusSuccess), event(4, spend.StatusSuccess)}
	rcv.down.Store(true)
	resp, err := c.HandleSQS(ctx, spendtest.Batch(more))
	if err != nil || len(resp.BatchItemFailures) != len(more) {
		t.Fatalf("receiver down: %v, %d failed, want %d", err, len(resp.BatchItemFailures), len(more))
	}
	rcv.down.Store(false)
	if resp, err := c.HandleSQS(ctx, spendtest.Batch(more)); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery: %v, %+v", err, resp)
	}
	got, _ = rcv.byID()
	for _, e := range more {
		if n := len(got[otel.SpanID(e.RequestID).String()]); n != 1 {
			t.Errorf("call %s: %d spans after the receiver came back, want 1", e.RequestID, n)
		}
	}
}

// TestEndpoint: LiteLLM's OTEL_ENDPOINT (a base, /v1/traces added) and the
// standard variables, the traces endpoint used as it is and first.
func TestEndpoint(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_ENDPOINT": "http://collector:4318"}, "http://collector:4318/v1/traces"},
		{map[string]string{"OTEL_ENDPOINT": "http://collector:4318/v1/traces"}, "http://collector:4318/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://api.honeycomb.io/"}, "https://api.honeycomb.io/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://x.test/custom", "OTEL_ENDPOINT": "http://y"}, "https://x.test/custom"},
		{map[string]string{"OTEL_ENDPOINT": "collector:4318"}, ""},
		{map[string]string{}, ""},
	} {
		got, err := otel.Endpoint(callbackstest.Env(tt.env))
		if got != tt.want || (tt.want == "") != (err != nil) {
			t.Errorf("%v: %q, %v; want %q", tt.env, got, err, tt.want)
		}
	}
	if _, err := otel.New(context.Background(), callbacks.Env{Getenv: func(k string) (string, bool) {
		return map[string]string{"OTEL_EXPORTER": "otlp_grpc", "OTEL_ENDPOINT": "http://c:4317"}[k], true
	}}); err == nil {
		t.Error("OTEL_EXPORTER=otlp_grpc accepted")
	}
}
