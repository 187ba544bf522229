package gateway_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/gateway"
)

// The fault matrix with openai/ deployments in front of fake OpenAI
// upstreams, one per deployment.

func (u *upstreams) serve(t *testing.T, id string, w http.ResponseWriter, r *http.Request) {
	body, model, f := u.hit(id, r)
	stream := gjson.GetBytes(body, "stream").Bool()

	if misbehave(t, f, w, r, openAIErrors) {
		return
	}
	if !stream {
		answer(w, f, true, fmt.Sprintf(`{"id":"chatcmpl-%s","object":"chat.completion","created":1,"model":%q,`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello from %s"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`, id, model, id))
		return
	}
	raw := streamTo(w)
	send := func(ev string) { raw("data: " + ev + "\n\n") }
	chunk := func(delta, finish string) string {
		return fmt.Sprintf(`{"id":"chatcmpl-%s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, id, delta, finish)
	}
	send(chunk(`{"role":"assistant","content":""}`, "null"))
	if f == fCutBeforeFirst {
		panic(http.ErrAbortHandler)
	}
	if f == fEndBeforeFirst {
		return
	}
	send(chunk(`{"content":"Hello"}`, "null"))
	if f == fCutAfterFirst {
		panic(http.ErrAbortHandler)
	}
	send(chunk(`{"content":" from `+id+`"}`, "null"))
	send(chunk(`{}`, `"stop"`))
	send("[DONE]")
}

var openAIErrors = vendorErrors{
	format: `{"error":{"message":%[2]q,"type":"invalid_request_error","param":null,"code":%[1]q}}`,
	errs: map[fault]vendorError{
		f429:           {http.StatusTooManyRequests, "rate_limit_exceeded", "Rate limit reached"},
		f500:           {http.StatusInternalServerError, "server_error", "The server had an error"},
		f503:           {http.StatusServiceUnavailable, "service_unavailable", "The engine is overloaded"},
		fContextWindow: {http.StatusBadRequest, "context_length_exceeded", "This model's maximum context length is 8192 tokens."},
		fContentPolicy: {http.StatusBadRequest, "content_filter", "The response was filtered due to the prompt triggering content management policy."},
	},
}

// faultGateway builds the handler over fresh upstreams: rand fixed at 0 (the
// first candidate: p1 before p2), no backoff waits, a fresh cooldown store.
func faultGateway(t *testing.T, extraSettings string) (*gateway.Handler, *upstreams) {
	t.Helper()
	return faultGatewayAt(t, extraSettings, nil)
}

// faultGatewayAt is faultGateway with the router's clock (cooldowns) set.
func faultGatewayAt(t *testing.T, extraSettings string, now func() time.Time) (*gateway.Handler, *upstreams) {
	t.Helper()
	u := newUpstreams(t, faultGroups, (*upstreams).serve)
	return faultHandler(t, u.config(faultConfig, extraSettings), now), u
}

func TestFaultMatrix(t *testing.T) {
	runFaultMatrix(t, func(t *testing.T) (*gateway.Handler, *upstreams) { return faultGateway(t, "") }, append([]matrixCase{
		{fContentPolicy, false, served(seq(pp[0], sf), "0", "1")},
		{fContentPolicy, true, served(seq(pp[0], sf), "0", "1")},
	}, vendorMatrix...))
}

// With disable_fallbacks in the body, streamed or not, only the primary
// group is tried (its retries included) and the client gets its error.
func TestFaultMatrixDisableFallbacks(t *testing.T) {
	for _, tc := range []struct {
		fault    fault
		attempts []attempt
		status   int
		code     string
	}{
		{f429, pp, 429, "upstream_rate_limited"},
		{f500, pp, 502, "upstream_server_error"},
		{f503, pp, 503, "upstream_server_error"},
		{fTimeout, pp, 504, "upstream_timeout"},
		{fReset, pp, 502, "upstream_connection_error"},
		{fContextWindow, pp[:1], 400, "context_length_exceeded"},
		{fContentPolicy, pp[:1], 400, "content_policy_violation"},
		{fCutBeforeFirst, pp, 502, "upstream_connection_error"},
		{fCutAfterFirst, pp, 502, "upstream_connection_error"}, // non-stream; the stream case is below
	} {
		for _, stream := range []bool{false, true} {
			if tc.fault == fCutAfterFirst && stream {
				continue
			}
			t.Run(fmt.Sprintf("%s/stream=%v", tc.fault, stream), func(t *testing.T) {
				h, u := faultGateway(t, "")
				u.set(tc.fault, "p1", "p2")
				rep := call(t, h, fmt.Sprintf(`{"model":"primary","messages":[],"stream":%v,"disable_fallbacks":true}`, stream))
				assertAttempts(t, u, tc.attempts)
				if rep.status != tc.status {
					t.Fatalf("status %d, want %d: %s", rep.status, tc.status, rep.body)
				}
				if got := gjson.Get(rep.body, "error.code").String(); got != tc.code {
					t.Fatalf("error code %q, want %q: %s", got, tc.code, rep.body)
				}
				retries := strconv.Itoa(len(tc.attempts) - 1)
				assertRouteHeaders(t, rep, tc.attempts[len(tc.attempts)-1], retries, "0")
			})
		}
	}
	t.Run("stream cut after the first chunk/stream=true", func(t *testing.T) {
		h, u := faultGateway(t, "")
		u.set(fCutAfterFirst, "p1", "p2")
		rep := call(t, h, `{"model":"primary","messages":[],"stream":true,"disable_fallbacks":true}`)
		assertAttempts(t, u, pp[:1])
		if rep.status != 200 || rep.content() != "Hello" {
			t.Fatalf("status %d content %q", rep.status, rep.content())
		}
		if final := rep.events[len(rep.events)-1]; gjson.Get(final, "error.code").String() != "stream_broken" {
			t.Fatalf("final event %s, want a stream_broken error event", final)
		}
	})
}

// Every group failing: the client gets the primary's error, after the
// primary's retries and the fallback's own (num_retries applies per group).
func TestFaultMatrixAllFail(t *testing.T) {
	for _, tc := range []struct {
		fault  fault
		stream bool
		status int
	}{
		{f500, false, 502},
		{f500, true, 502},
		{f503, false, 503},
		{fTimeout, true, 504},
	} {
		t.Run(fmt.Sprintf("%s/stream=%v", tc.fault, tc.stream), func(t *testing.T) {
			h, u := faultGateway(t, "")
			u.set(tc.fault, "p1", "p2", "b1")
			rep := call(t, h, fmt.Sprintf(`{"model":"primary","messages":[],"stream":%v}`, tc.stream))
			assertAttempts(t, u, seq(pp, bk, bk))
			if rep.status != tc.status {
				t.Fatalf("status %d, want %d: %s", rep.status, tc.status, rep.body)
			}
			if !strings.Contains(gjson.Get(rep.body, "error.message").String(), "fallbacks tried: backup") {
				t.Fatalf("error message does not name the fallbacks tried: %s", rep.body)
			}
		})
	}
}

// A stream that ends cleanly before any content (no [DONE]) is as broken as
// a cut one: nothing was sent, so it is retried and falls back.
func TestFaultStreamEndsBeforeFirstChunk(t *testing.T) {
	h, u := faultGateway(t, "")
	u.set(fEndBeforeFirst, "p1", "p2")
	rep := call(t, h, `{"model":"primary","messages":[],"stream":true}`)
	assertAttempts(t, u, seq(pp, bk))
	if rep.status != 200 || rep.content() != "Hello from b1" {
		t.Fatalf("status %d content %q: %s", rep.status, rep.content(), rep.body)
	}
}

// A deployment cooled by one request is skipped by the next one, through
// the gateway: a 429 cools p1 at once.
func TestFaultCooldownAcrossRequests(t *testing.T) {
	h, u := faultGateway(t, "")
	u.set(f429, "p1")
	rep := call(t, h, `{"model":"primary","messages":[]}`)
	if rep.status != 200 {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	rep = call(t, h, `{"model":"primary","messages":[]}`)
	if rep.status != 200 {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	assertAttempts(t, u, seq(pp, pp[1]))
}

// Every deployment of the group cooling down: 429 with Retry-After at the
// earliest end, and no upstream call.
func TestFaultWholeGroupCooling(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	h, u := faultGatewayAt(t, "  cooldown_time: 7\n", func() time.Time { return at })
	u.set(f429, "p1", "p2")
	rep := call(t, h, `{"model":"primary","messages":[],"disable_fallbacks":true}`)
	if rep.status != 429 {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	for _, stream := range []bool{false, true} {
		rep = call(t, h, fmt.Sprintf(`{"model":"primary","messages":[],"stream":%v,"disable_fallbacks":true}`, stream))
		if rep.status != 429 || rep.header.Get("Retry-After") != "7" || gjson.Get(rep.body, "error.code").String() != "no_deployments_available" {
			t.Fatalf("stream=%v: status %d Retry-After %q: %s", stream, rep.status, rep.header.Get("Retry-After"), rep.body)
		}
	}
	assertAttempts(t, u, pp)
	// Without disable_fallbacks the cooling group falls back.
	rep = call(t, h, `{"model":"primary","messages":[]}`)
	if rep.status != 200 || rep.content() != "Hello from b1" {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	assertAttempts(t, u, seq(pp, bk))
}

// x-litellm-attempted-retries counts retries, also when a fallback group
// was entered without an attempt (every deployment blocked or cooling).
func TestFaultHeadersCountRetriesPastAnEmptyFallbackGroup(t *testing.T) {
	h, u := faultGateway(t, "")
	// backup's only deployment cools down first (a 429 when called directly).
	u.set(f429, "b1")
	if rep := call(t, h, `{"model":"backup","messages":[],"disable_fallbacks":true}`); rep.status != 429 {
		t.Fatalf("warm-up status %d: %s", rep.status, rep.body)
	}
	u.set(healthy, "b1")
	u.set(f500, "p1", "p2")
	rep := call(t, h, `{"model":"primary","messages":[],"fallbacks":["backup","safe"]}`)
	assertAttempts(t, u, seq(bk, pp, sf))
	if rep.status != 200 {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	assertRouteHeaders(t, rep, sf, "1", "2")
}
