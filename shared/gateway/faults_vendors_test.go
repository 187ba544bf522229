package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
)

// The fault matrix again for the translating vendors (TestFaultVendors).
// Anthropic: every deployment an anthropic/ one in front
// of a fake Anthropic API that fails the way Anthropic does (its error
// bodies, 529 overloaded, "prompt is too long", an error event in a 200
// stream).

// fErrorEvent: an error event (overloaded) after the first content; before
// any content when combined with fCutBeforeFirst's position.
const (
	fErrorAfterFirst fault = "error event after the first chunk"
	fErrorFirst      fault = "error event as the first event"
)

var anthropicErrors = vendorErrors{
	format: `{"type":"error","error":{"type":%q,"message":%q}}`,
	errs: map[fault]vendorError{
		f429:           {http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"},
		f500:           {http.StatusInternalServerError, "api_error", "Internal server error"},
		f503:           {529, "overloaded_error", "Overloaded"},
		fContextWindow: {http.StatusBadRequest, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"},
	},
}

func (u *upstreams) serveAnthropic(t *testing.T, id string, w http.ResponseWriter, r *http.Request) {
	body, model, f := u.hit(id, r)
	if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "k" || r.Header.Get("anthropic-version") != "2023-06-01" {
		t.Errorf("request %s with headers %v", r.URL.Path, r.Header)
	}
	stream := gjson.GetBytes(body, "stream").Bool()
	if misbehave(t, f, w, r, anthropicErrors) {
		return
	}
	if !stream {
		answer(w, f, false, fmt.Sprintf(`{"id":"msg_%s","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"Hello from %s"}],`+
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":3}}`, id, model, id))
		return
	}
	raw := streamTo(w)
	send := func(name, data string) { raw("event: " + name + "\ndata: " + data + "\n\n") }
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	if f == fErrorFirst {
		send("error", overloaded)
		return
	}
	send("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%s","type":"message","role":"assistant","content":[],"model":%q,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`, id, model))
	send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	send("ping", `{"type": "ping"}`)
	if f == fCutBeforeFirst {
		panic(http.ErrAbortHandler)
	}
	if f == fEndBeforeFirst {
		return
	}
	delta := func(text string) {
		send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, text))
	}
	delta("Hello")
	switch f {
	case fCutAfterFirst:
		panic(http.ErrAbortHandler)
	case fErrorAfterFirst:
		send("error", overloaded)
		return
	}
	delta(" from " + id)
	send("content_block_stop", `{"type":"content_block_stop","index":0}`)
	send("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`)
	send("message_stop", `{"type":"message_stop"}`)
}

// vendorGateway builds the fault gateway with every deployment a prefix/
// one, each in front of a fake of its vendor (serve).
func vendorGateway(prefix string, serve func(u *upstreams, t *testing.T, id string, w http.ResponseWriter, r *http.Request)) func(*testing.T) (*gateway.Handler, *upstreams) {
	return func(t *testing.T) (*gateway.Handler, *upstreams) {
		t.Helper()
		u := newUpstreams(t, faultGroups, serve)
		return faultHandler(t, u.config(strings.ReplaceAll(faultConfig, "model: openai/", "model: "+prefix+"/"), ""), nil), u
	}
}

var (
	anthropicFaultGateway = vendorGateway("anthropic", (*upstreams).serveAnthropic)
	geminiFaultGateway    = vendorGateway("gemini", (*upstreams).serveGemini) // faults_gemini_test.go
)

// vendorStatuses are the statuses every translating vendor's errors stand
// for, beside its own (TestFaultVendors).
var vendorStatuses = []statusCase[fault]{
	{f429, false, 429, "upstream_rate_limited"},
	{f503, false, 503, "upstream_server_error"},
	{fErrorFirst, true, 503, "upstream_server_error"},
	{f500, true, 502, "upstream_server_error"},
	{fContextWindow, false, 400, "context_length_exceeded"},
}

// TestFaultVendors: the fault matrix again for each translating vendor,
// with the vendor's own failures (its error events, Google's blocked
// prompt); and with disable_fallbacks, the status the vendor's error
// stands for.
func TestFaultVendors(t *testing.T) {
	for _, v := range []struct {
		name     string
		build    func(*testing.T) (*gateway.Handler, *upstreams)
		matrix   []matrixCase
		statuses []statusCase[fault]
	}{
		{"anthropic", anthropicFaultGateway, []matrixCase{
			{fEndBeforeFirst, true, served(seq(pp, bk), "1", "1")},
			{fErrorFirst, true, served(seq(pp, bk), "1", "1")},
			{fErrorAfterFirst, true, brokenAfterFirst("overloaded_error")}, // Anthropic's error event
		}, []statusCase[fault]{
			{f503, true, 503, "upstream_server_error"},
		}},
		{"gemini", geminiFaultGateway, []matrixCase{
			{fEndBeforeFirst, true, served(seq(pp, bk), "1", "1")},
			{fErrorFirst, true, served(seq(pp, bk), "1", "1")},
			{fErrorAfterFirst, true, brokenAfterFirst("UNAVAILABLE")}, // Google's error event
			{fContentPolicy, false, served(seq(pp[0], sf), "0", "1")},
			{fContentPolicy, true, served(seq(pp[0], sf), "0", "1")},
		}, []statusCase[fault]{
			{f429, true, 429, "upstream_rate_limited"},
			{fContextWindow, true, 400, "context_length_exceeded"},
			{fContentPolicy, false, 400, "content_policy_violation"},
			{fContentPolicy, true, 400, "content_policy_violation"},
		}},
	} {
		t.Run(v.name+"/matrix", func(t *testing.T) {
			runFaultMatrix(t, v.build, append(v.matrix, vendorMatrix...))
		})
		t.Run(v.name+"/statuses", func(t *testing.T) {
			runStatuses(t, func(t *testing.T) (http.Handler, func(fault)) {
				h, u := v.build(t)
				return h, func(f fault) { u.set(f, "p1", "p2") }
			}, append(v.statuses, vendorStatuses...))
		})
	}
}

// The fault matrix again, with every deployment a gemini/ one in front of a
// fake Gemini API that fails the way Google's does: its error bodies
// ({"error":{"code","message","status"}}), 429 RESOURCE_EXHAUSTED, 400
// INVALID_ARGUMENT over the context window, a prompt blocked by the safety
// filters (a 200 with promptFeedback.blockReason), an error event in a 200
// stream.

var geminiErrors = vendorErrors{
	format: `{"error":{"code":0,"status":%q,"message":%q}}`,
	errs: map[fault]vendorError{
		f429:           {http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."},
		f500:           {http.StatusInternalServerError, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"},
		f503:           {http.StatusServiceUnavailable, "UNAVAILABLE", "The model is overloaded. Please try again later."},
		fContextWindow: {http.StatusBadRequest, "INVALID_ARGUMENT", "The input token count (1196265) exceeds the maximum number of tokens allowed (1048576)."},
	},
}

const geminiUsage = `"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":3,"totalTokenCount":8}`

func (u *upstreams) serveGemini(t *testing.T, id string, w http.ResponseWriter, r *http.Request) {
	// The model is in the path: /models/{model}:{method}.
	rest, ok := strings.CutPrefix(r.URL.Path, "/models/")
	model, method, _ := strings.Cut(rest, ":")
	u.mu.Lock()
	u.hits = append(u.hits, attempt{u.groups[id], id, model})
	f := u.faults[id]
	u.mu.Unlock()
	io.Copy(io.Discard, r.Body)
	stream := method == "streamGenerateContent"
	if !ok || (method != "generateContent" && !stream) || (stream && r.URL.RawQuery != "alt=sse") ||
		r.Header.Get("Authorization") != "Bearer k" || r.URL.Query().Has("key") {
		t.Errorf("request %s?%s with headers %v", r.URL.Path, r.URL.RawQuery, r.Header)
	}
	if misbehave(t, f, w, r, geminiErrors) {
		return
	}
	if blocked := `{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},` + geminiUsage + `}`; f == fContentPolicy && !stream {
		answer(w, healthy, false, blocked)
		return
	} else if f == fContentPolicy {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+blocked+"\n\n")
		return
	}
	if !stream {
		answer(w, f, false, fmt.Sprintf(`{"candidates":[{"content":{"parts":[{"text":"Hello from %s"}],"role":"model"},"finishReason":"STOP","index":0}],%s,"modelVersion":%q,"responseId":"r-%s"}`, id, geminiUsage, model, id))
		return
	}
	raw := streamTo(w)
	send := func(data string) { raw("data: " + data + "\r\n\r\n") }
	unavailable := `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`
	switch f {
	case fErrorFirst:
		send(unavailable)
		return
	case fCutBeforeFirst:
		panic(http.ErrAbortHandler)
	case fEndBeforeFirst:
		return
	}
	chunk := func(text, finish string) string {
		return fmt.Sprintf(`{"candidates":[{"content":{"parts":[{"text":%q}],"role":"model"}%s,"index":0}],%s,"modelVersion":%q}`, text, finish, geminiUsage, model)
	}
	send(chunk("Hello", ""))
	switch f {
	case fCutAfterFirst:
		panic(http.ErrAbortHandler)
	case fErrorAfterFirst:
		send(unavailable)
		return
	}
	send(chunk(" from "+id, `,"finishReason":"STOP"`))
}

// A Gemini answer's usage (thinking tokens billed as output, cached tokens
// at the cache price) is what the gateway prices, from the embedded table.
func TestGeminiSpendPriced(t *testing.T) {
	srv := gatewayUpstreamGemini(t)
	yaml := fmt.Sprintf(`
model_list:
  - model_name: flash
    litellm_params: {model: gemini/gemini-2.5-flash, api_base: "%s", api_key: k}
`, srv)
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ResolvePrices(pricing.Default())
	client := providers.NewHTTPClient()
	t.Cleanup(client.CloseIdleConnections)
	done := make(chan *gateway.Completion, 2)
	h := gateway.New(gateway.Options{Config: cfg, Router: router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: gatewaytest.Quiet()}),
		Provider: providers.New(client), Logger: gatewaytest.Quiet(), Prices: pricing.Default(),
		OnComplete: func(_ context.Context, c *gateway.Completion) { done <- c }})
	for _, tc := range []struct{ stream, usage bool }{{false, false}, {true, true}, {true, false}} {
		stream := tc.stream
		rep := call(t, h, fmt.Sprintf(`{"model":"flash","messages":[{"role":"user","content":"hi"}],"stream":%v,"stream_options":{"include_usage":%v}}`, stream, tc.usage))
		if rep.status != 200 {
			t.Fatalf("stream=%v: status %d: %s", stream, rep.status, rep.body)
		}
		// gemini-2.5-flash: $0.30/M input, $0.03/M cached, $2.50/M output:
		// 1000 plain + 200 cached input, 50 + 150 thinking output.
		if c := <-done; c.CostNanos != 806_000 || !c.CostKnown || c.UsageEstimated {
			t.Fatalf("stream=%v: cost %d nano-USD (known %v, estimated %v), want 806000", stream, c.CostNanos, c.CostKnown, c.UsageEstimated)
		}
		if got := rep.header.Get("x-litellm-response-cost"); !stream && got != "0.000806" {
			t.Fatalf("cost header %q, want 0.000806", got)
		}
		usage := gjson.Get(rep.body, "usage")
		if stream && !tc.usage {
			for _, ev := range rep.events {
				if gjson.Get(ev, "usage").Exists() {
					t.Fatalf("a usage chunk the client did not ask for: %s", ev)
				}
			}
			continue
		}
		if stream {
			usage = gjson.Get(rep.events[len(rep.events)-2], "usage")
		}
		if usage.Get("prompt_tokens").Int() != 1200 || usage.Get("completion_tokens").Int() != 200 ||
			usage.Get("prompt_tokens_details.cached_tokens").Int() != 200 {
			t.Fatalf("stream=%v: usage %s", stream, usage.Raw)
		}
	}
}

func gatewayUpstreamGemini(t *testing.T) string {
	meta := `"usageMetadata":{"promptTokenCount":1200,"cachedContentTokenCount":200,"candidatesTokenCount":50,"thoughtsTokenCount":150,"totalTokenCount":1400}`
	srv := newUpstreams(t, map[string]string{"f": "flash"}, func(_ *upstreams, t *testing.T, _ string, w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if strings.Contains(r.URL.Path, ":streamGenerateContent") {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"candidates":[{"content":{"parts":[{"text":"thinking...","thought":true}],"role":"model"},"index":0}]}`+"\n\n")
			io.WriteString(w, `data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}],`+meta+`}`+"\n\n")
			return
		}
		answer(w, healthy, true, `{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}],`+meta+`}`)
	})
	return srv.srvs["f"].URL
}

// /v1/responses and /v1/messages reach a Gemini deployment through the
// chat translation, streamed or not, and answer in their own shapes.
func TestGeminiResponsesAndMessages(t *testing.T) {
	h, _ := geminiFaultGateway(t)
	post := func(path, body string) string {
		req := gatewaytest.Request(http.MethodPost, path, "", body)
		req.Header.Set("Content-Type", "application/json")
		rec := gatewaytest.Do(h, req)
		if rec.Code != 200 {
			t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	if b := post("/v1/responses", `{"model":"primary","input":"hi","store":false}`); gjson.Get(b, `output.#(type=="message").content.0.text`).String() != "Hello from p1" {
		t.Fatalf("responses: %s", b)
	}
	if b := post("/v1/responses", `{"model":"primary","input":"hi","store":false,"stream":true}`); !strings.Contains(b, "response.completed") || !strings.Contains(b, `"delta":" from p1"`) {
		t.Fatalf("responses stream: %s", b)
	}
	if b := post("/v1/messages", `{"model":"primary","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`); gjson.Get(b, "type").String() != "message" || gjson.Get(b, "content.0.text").String() != "Hello from p1" ||
		gjson.Get(b, "usage.input_tokens").Int() != 5 {
		t.Fatalf("messages: %s", b)
	}
	if b := post("/v1/messages", `{"model":"primary","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`); !strings.Contains(b, "event: message_stop") || !strings.Contains(b, `"text":" from p1"`) {
		t.Fatalf("messages stream: %s", b)
	}
}
