package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/gateway"
)

// The fault matrix again, with every deployment an anthropic/ one in front
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
			{f429, false, 429, "upstream_rate_limited"},
			{f503, false, 503, "upstream_server_error"},
			{f503, true, 503, "upstream_server_error"},
			{fErrorFirst, true, 503, "upstream_server_error"},
			{f500, true, 502, "upstream_server_error"},
			{fContextWindow, false, 400, "context_length_exceeded"},
		}},
		{"gemini", geminiFaultGateway, []matrixCase{
			{fEndBeforeFirst, true, served(seq(pp, bk), "1", "1")},
			{fErrorFirst, true, served(seq(pp, bk), "1", "1")},
			{fErrorAfterFirst, true, brokenAfterFirst("UNAVAILABLE")}, // Google's error event
			{fContentPolicy, false, served(seq(pp[0], sf), "0", "1")},
			{fContentPolicy, true, served(seq(pp[0], sf), "0", "1")},
		}, []statusCase[fault]{
			{f429, false, 429, "upstream_rate_limited"},
			{f429, true, 429, "upstream_rate_limited"},
			{f503, false, 503, "upstream_server_error"},
			{fErrorFirst, true, 503, "upstream_server_error"},
			{f500, true, 502, "upstream_server_error"},
			{fContextWindow, false, 400, "context_length_exceeded"},
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
			}, v.statuses)
		})
	}
}
