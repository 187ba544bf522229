package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	post := func(path, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
		}
		return rec
	}
	rec := post("/v1/responses", `{"model":"primary","input":"hi","store":false}`)
	if got := gjson.Get(rec.Body.String(), `output.#(type=="message").content.0.text`).String(); got != "Hello from p1" {
		t.Fatalf("responses: %s", rec.Body)
	}
	rec = post("/v1/responses", `{"model":"primary","input":"hi","store":false,"stream":true}`)
	if b := rec.Body.String(); !strings.Contains(b, "response.completed") || !strings.Contains(b, `"delta":" from p1"`) {
		t.Fatalf("responses stream: %s", b)
	}
	rec = post("/v1/messages", `{"model":"primary","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`)
	if b := rec.Body.String(); gjson.Get(b, "type").String() != "message" || gjson.Get(b, "content.0.text").String() != "Hello from p1" ||
		gjson.Get(b, "usage.input_tokens").Int() != 5 {
		t.Fatalf("messages: %s", b)
	}
	rec = post("/v1/messages", `{"model":"primary","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if b := rec.Body.String(); !strings.Contains(b, "event: message_stop") || !strings.Contains(b, `"text":" from p1"`) {
		t.Fatalf("messages stream: %s", b)
	}
}
