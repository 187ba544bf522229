package gateway_test

// Benchmarks of the gateway's own overhead.
//
//	go test -run '^$' -bench . -benchmem ./shared/gateway/
//
// BenchmarkOverhead sends the same requests to a local fake upstream directly
// and through the gateway (served by httptest.NewServer): the difference in
// ns/op and allocs/op is the cost of the gateway hop (the client, the fake
// upstream and the gateway all run in this process, so allocs/op counts all
// of them). BenchmarkHandler calls the handler alone, with no network, to
// isolate its per-request CPU and allocations.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/providers/bedrock"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// The same request and responses as test/bench (loadgen, mock).
var (
	jsonRequest   = benchRequest(false)
	streamRequest = benchRequest(true)

	// benchModes are the two requests every handler benchmark serves.
	benchModes = []struct {
		name   string
		stream bool
		body   []byte
	}{{"json", false, jsonRequest}, {"sse", true, streamRequest}}

	completionBody = []byte(`{"id":"chatcmpl-mock0001","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","system_fingerprint":"fp_mock","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! This is a fixed response from the mock upstream."},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":13,"total_tokens":25}}`)
	streamBody     = sseBody(20)
)

func benchRequest(stream bool) []byte {
	return fmt.Appendf(nil, `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":64,"temperature":0.2,"stream":%v}`, stream)
}

// sseBody is n chat.completion.chunk events (role, content..., finish with
// usage) and [DONE].
func sseBody(n int) []byte {
	head := `{"id":"chatcmpl-mock0001","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","system_fingerprint":"fp_mock","choices":[`
	var b bytes.Buffer
	for i := range n {
		b.WriteString("data: ")
		b.WriteString(head)
		switch i {
		case 0:
			b.WriteString(`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`)
		case n - 1:
			fmt.Fprintf(&b, `{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":%d,"total_tokens":%d}}`, n-2, 12+n-2)
		default:
			fmt.Fprintf(&b, `{"index":0,"delta":{"content":"tok%d "},"logprobs":null,"finish_reason":null}]}`, i)
		}
		b.WriteString("\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// fakeUpstream answers chat completions like the bench mock: the fixed JSON
// at once, or the SSE events each flushed on its own.
func fakeUpstream(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		if !bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(len(completionBody)))
			_, _ = w.Write(completionBody)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		for rest := streamBody; len(rest) > 0; {
			i := bytes.Index(rest, []byte("\n\n")) + 2
			_, _ = w.Write(rest[:i])
			f.Flush()
			rest = rest[i:]
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

func discardLogger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: level}))
}

// newHandler builds the gateway over a LiteLLM config, as app.Build does,
// with logs formatted at level but discarded.
func newHandler(b *testing.B, configYAML string, p gateway.Provider, level slog.Level) *gateway.Handler {
	cfg, err := config.Load([]byte(configYAML), nil)
	if err != nil {
		b.Fatal(err)
	}
	log := discardLogger(level)
	if p == nil {
		p = providers.New(providers.NewHTTPClient())
	}
	return gateway.New(gateway.Options{
		Config: cfg, Router: router.New(cfg, router.Options{Logger: log}), Provider: p, Logger: log,
	})
}

func openAIConfig(apiBase string) string {
	return `
model_list:
  - model_name: gpt-4o-mini
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: ` + apiBase + `
      api_key: dummy
`
}

const mockConfig = `
model_list:
  - model_name: gpt-4o-mini
    litellm_params:
      model: mock/gpt-4o-mini
`

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true,
	}}
}

// post sends one request and reads the whole answer into buf.
func post(ctx context.Context, client *http.Client, url string, body []byte, buf *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-bench")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %.300s", resp.StatusCode, buf.Bytes())
	}
	return nil
}

func checkBody(stream bool, got []byte) error {
	if stream {
		if !bytes.HasSuffix(got, []byte("data: [DONE]\n\n")) || bytes.Count(got, []byte("data: ")) != 21 {
			return fmt.Errorf("stream of %d events not ending with [DONE]: %.300s", bytes.Count(got, []byte("data: ")), got)
		}
		return nil
	}
	if !bytes.Contains(got, []byte(`"usage"`)) {
		return fmt.Errorf("response without usage: %.300s", got)
	}
	return nil
}

// BenchmarkOverhead compares the same requests direct to the fake upstream,
// through net/http's bare ReverseProxy (the floor for any Go hop, as
// test/bench/bareproxy), and through the gateway; one at a time
// (serial: latency) and from GOMAXPROCS goroutines (parallel: throughput).
//
// The bare proxy cuts a few streams ("unexpected EOF": the HTTP/1 server
// closes the inbound body once the response starts while the transport still
// reads it, golang/go#40747); those are counted as failed/op, not fatal. The
// gateway reads the body before calling upstream, so any failure there is.
func BenchmarkOverhead(b *testing.B) {
	up := fakeUpstream(b)
	gw := httptest.NewServer(newHandler(b, openAIConfig(up.URL+"/v1"), nil, slog.LevelInfo))
	b.Cleanup(gw.Close)
	bare := httptest.NewServer(bareProxy(b, up.URL))
	b.Cleanup(bare.Close)
	for _, mode := range benchModes {
		for _, target := range []struct {
			name, url string
			tolerant  bool // count failures instead of failing
		}{
			{"direct", up.URL + "/v1/chat/completions", false},
			{"bareproxy", bare.URL + "/v1/chat/completions", true},
			{"gateway", gw.URL + "/v1/chat/completions", false},
		} {
			// one sends a request; it reports false when the benchmark must stop.
			one := func(b *testing.B, ctx context.Context, client *http.Client, buf *bytes.Buffer, failed *atomic.Int64) bool {
				err := post(ctx, client, target.url, mode.body, buf)
				if err == nil {
					err = checkBody(mode.stream, buf.Bytes())
				}
				switch {
				case err == nil:
				case target.tolerant:
					failed.Add(1)
				default:
					b.Error(err)
					return false
				}
				return true
			}
			b.Run(mode.name+"/"+target.name+"/serial", func(b *testing.B) {
				client := benchClient()
				defer client.CloseIdleConnections()
				var buf bytes.Buffer
				var failed atomic.Int64
				b.ReportAllocs()
				for b.Loop() {
					if !one(b, b.Context(), client, &buf, &failed) {
						return
					}
				}
				b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/op")
			})
			b.Run(mode.name+"/"+target.name+"/parallel", func(b *testing.B) {
				client := benchClient()
				defer client.CloseIdleConnections()
				var failed atomic.Int64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					var buf bytes.Buffer
					for pb.Next() {
						if !one(b, context.Background(), client, &buf, &failed) {
							return
						}
					}
				})
				b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/op")
			})
		}
	}
}

// fixedProvider answers every call with the bench mock's bytes, so that
// BenchmarkHandler/fixed measures the gateway alone (not the mock provider's
// own JSON encoding).
type fixedProvider struct{}

func (fixedProvider) Do(_ context.Context, _ *config.Deployment, call wire.Call) (*http.Response, error) {
	ct, body := "application/json", completionBody
	if call.Stream {
		ct, body = "text/event-stream", streamBody
	}
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ct}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}, nil
}

// BenchmarkHandler serves requests with httptest.NewRecorder and no network
// (requests built with http.NewRequest: httptest.NewRequest parses a wire
// request, which would dominate the profile):
// "mock" through the project's mock provider, "fixed" through a provider that
// returns fixed bytes (the gateway's own per-request cost). log=info formats
// the per-request log lines as production does by default; log=warn skips them.
func BenchmarkHandler(b *testing.B) {
	for _, prov := range []struct {
		name string
		p    gateway.Provider
	}{{"fixed", fixedProvider{}}, {"mock", nil}} {
		for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
			h := newHandler(b, mockConfig, prov.p, level)
			for _, mode := range benchModes {
				name := fmt.Sprintf("%s/%s/log=%s", mode.name, prov.name, strings.ToLower(level.String()))
				b.Run(name, func(b *testing.B) {
					rec := serveLoop(b, h, mode.body, nil)
					if prov.p != nil { // the mock provider answers its own text
						if err := checkBody(mode.stream, rec.Body.Bytes()); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkHandlerMetrics is BenchmarkHandler's fixed/log=warn case with
// metrics on: "off" (no registry, as BenchmarkHandler), "prom" (local
// mode's counts) and "emf" (Lambda: one EMF line per request, flushed to
// io.Discard after each, as the after-response hook does).
func BenchmarkHandlerMetrics(b *testing.B) {
	for _, mode := range benchModes {
		for _, m := range []string{"off", "prom", "emf"} {
			b.Run(mode.name+"/metrics="+m, func(b *testing.B) {
				cfg, err := config.Load([]byte(mockConfig), nil)
				if err != nil {
					b.Fatal(err)
				}
				log := discardLogger(slog.LevelWarn)
				var reg *metrics.Registry
				switch m {
				case "prom":
					reg = metrics.New(metrics.Options{Prometheus: true})
				case "emf":
					reg = metrics.New(metrics.Options{EMF: io.Discard})
				}
				h := gateway.New(gateway.Options{
					Config: cfg, Router: router.New(cfg, router.Options{Logger: log}), Provider: fixedProvider{}, Logger: log, Metrics: reg,
				})
				serveLoop(b, h, mode.body, func() { _ = reg.Flush() })
			})
		}
	}
}

// serveLoop is the body of the handler benchmarks: body POSTed to h as
// chat completions, each answer checked to be a 200, then after (if set).
// It returns the last answer.
func serveLoop(b *testing.B, h http.Handler, reqBody []byte, after func()) *httptest.ResponseRecorder {
	b.ReportAllocs()
	var rec *httptest.ResponseRecorder
	var body bytes.Buffer // reused: the recorder's growth is not the handler's cost
	for b.Loop() {
		req, err := http.NewRequest(http.MethodPost, "http://gateway.test/v1/chat/completions", bytes.NewReader(reqBody))
		if err != nil {
			b.Fatal(err)
		}
		req.Header["Content-Type"] = []string{"application/json"}
		rec = httptest.NewRecorder()
		body.Reset()
		rec.Body = &body
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
		}
		if after != nil {
			after()
		}
	}
	return rec
}

// bareProxy is test/bench/bareproxy: httputil.ReverseProxy with no logic,
// flushing every write.
func bareProxy(b *testing.B, upstream string) http.Handler {
	u, err := url.Parse(upstream)
	if err != nil {
		b.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 512, DisableCompression: true}
	rp.ErrorLog = log.New(io.Discard, "", 0)
	return rp
}

// BenchmarkHandlerProviders is BenchmarkHandler's "fixed" case (no network,
// log=warn) for each protocol: the OpenAI passthrough, and the Anthropic and
// Bedrock translators (request translated, a fixed provider answer of the
// same size as the OpenAI one translated back, 18 content events when
// streamed). The differences are the translators' cost per request.
//
//	go test -run '^$' -bench HandlerProviders -benchmem ./shared/gateway/
func BenchmarkHandlerProviders(b *testing.B) {
	for _, prov := range []struct {
		name string
		p    interface {
			Do(context.Context, *config.Deployment, wire.Call) (*http.Response, error)
		}
	}{{"openai", fixedProvider{}}, {"anthropic", anthropicFixed{}}, {"bedrock", bedrockFixed{}}} {
		h := newHandler(b, mockConfig, prov.p, slog.LevelWarn)
		for _, mode := range benchModes {
			b.Run(mode.name+"/"+prov.name, func(b *testing.B) {
				serveLoop(b, h, mode.body, nil)
			})
		}
	}
}

var (
	anthropicMessage = []byte(`{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"Hello! This is a fixed response from the mock upstream."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":13}}`)
	anthropicSSE     = func() []byte {
		var b bytes.Buffer
		ev := func(name, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-20250514","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for i := 1; i <= 18; i++ {
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tok%d "}}`, i))
		}
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":18}}`)
		ev("message_stop", `{"type":"message_stop"}`)
		return b.Bytes()
	}()
)

// anthropicFixed translates the request and answers with a fixed Anthropic
// response, translated back.
type anthropicFixed struct{}

func (anthropicFixed) Do(_ context.Context, _ *config.Deployment, call wire.Call) (*http.Response, error) {
	if _, err := anthropic.TranslateRequest(call.Body, 4096); err != nil {
		return nil, err
	}
	if call.Stream {
		s := anthropic.NewStream(io.NopCloser(bytes.NewReader(anthropicSSE)), true, 1700000000)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: s, ContentLength: -1}, nil
	}
	out, err := anthropic.TranslateResponse(anthropicMessage, 1700000000)
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(out)), ContentLength: int64(len(out))}, nil
}

// bedrockFixed translates the request and answers with a fixed Converse
// output or event sequence, translated back.
type bedrockFixed struct{}

var converseOutput = &bedrockruntime.ConverseOutput{
	Output: &types.ConverseOutputMemberMessage{Value: types.Message{Role: types.ConversationRoleAssistant,
		Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Hello! This is a fixed response from the mock upstream."}}}},
	StopReason: types.StopReasonEndTurn,
	Usage:      &types.TokenUsage{InputTokens: aws.Int32(12), OutputTokens: aws.Int32(13), TotalTokens: aws.Int32(25)},
}

var converseEvents = func() []types.ConverseStreamOutput {
	evs := []types.ConverseStreamOutput{&types.ConverseStreamOutputMemberMessageStart{Value: types.MessageStartEvent{Role: types.ConversationRoleAssistant}}}
	for i := 1; i <= 18; i++ {
		evs = append(evs, &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{
			ContentBlockIndex: aws.Int32(0), Delta: &types.ContentBlockDeltaMemberText{Value: fmt.Sprintf("tok%d ", i)}}})
	}
	return append(evs,
		&types.ConverseStreamOutputMemberContentBlockStop{Value: types.ContentBlockStopEvent{ContentBlockIndex: aws.Int32(0)}},
		&types.ConverseStreamOutputMemberMessageStop{Value: types.MessageStopEvent{StopReason: types.StopReasonEndTurn}},
		&types.ConverseStreamOutputMemberMetadata{Value: types.ConverseStreamMetadataEvent{
			Usage: &types.TokenUsage{InputTokens: aws.Int32(12), OutputTokens: aws.Int32(18), TotalTokens: aws.Int32(30)}}})
}()

type sliceEvents struct {
	ch chan types.ConverseStreamOutput
}

func (s sliceEvents) Events() <-chan types.ConverseStreamOutput { return s.ch }
func (sliceEvents) Err() error                                  { return nil }
func (sliceEvents) Close() error                                { return nil }

func (bedrockFixed) Do(_ context.Context, _ *config.Deployment, call wire.Call) (*http.Response, error) {
	req, err := bedrock.TranslateRequest(call.Body, "anthropic.claude-3-5-haiku-20241022-v1:0")
	if err != nil {
		return nil, err
	}
	if call.Stream {
		ch := make(chan types.ConverseStreamOutput, len(converseEvents))
		for _, ev := range converseEvents {
			ch <- ev
		}
		close(ch)
		s := bedrock.NewStream(sliceEvents{ch}, *req.Input.ModelId, req.IncludeUsage, 1700000000)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: s, ContentLength: -1}, nil
	}
	out := bedrock.TranslateOutput(converseOutput, *req.Input.ModelId, 1700000000)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(out)), ContentLength: int64(len(out))}, nil
}
