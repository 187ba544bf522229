package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
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

func newAnthropicUpstreams(t *testing.T, groups map[string]string) *upstreams {
	u := &upstreams{faults: map[string]fault{}, srvs: map[string]*httptest.Server{}, groups: groups}
	for id := range groups {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { u.serveAnthropic(t, id, w, r) }))
		t.Cleanup(srv.Close)
		u.srvs[id] = srv
	}
	return u
}

func (u *upstreams) serveAnthropic(t *testing.T, id string, w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	model := gjson.GetBytes(body, "model").String()
	u.mu.Lock()
	u.hits = append(u.hits, attempt{u.groups[id], id, model})
	f := u.faults[id]
	u.mu.Unlock()
	if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "k" || r.Header.Get("anthropic-version") != "2023-06-01" {
		t.Errorf("request %s with headers %v", r.URL.Path, r.Header)
	}
	stream := gjson.GetBytes(body, "stream").Bool()
	apiError := func(status int, typ, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
	}
	switch f {
	case f429:
		apiError(http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
		return
	case f500:
		apiError(http.StatusInternalServerError, "api_error", "Internal server error")
		return
	case f503:
		apiError(529, "overloaded_error", "Overloaded")
		return
	case fContextWindow:
		apiError(http.StatusBadRequest, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum")
		return
	case fTimeout:
		<-r.Context().Done()
		return
	case fReset:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
		return
	}
	if !stream {
		out := fmt.Sprintf(`{"id":"msg_%s","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"Hello from %s"}],`+
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":3}}`, id, model, id)
		w.Header().Set("Content-Type", "application/json")
		if f == fCutBeforeFirst || f == fCutAfterFirst {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, out[:len(out)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		io.WriteString(w, out)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(name, data string) {
		io.WriteString(w, "event: "+name+"\ndata: "+data+"\n\n")
		w.(http.Flusher).Flush()
	}
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

func anthropicFaultGateway(t *testing.T) (*gateway.Handler, *upstreams) {
	t.Helper()
	u := newAnthropicUpstreams(t, faultGroups)
	yaml := fmt.Sprintf(strings.ReplaceAll(faultConfig, "model: openai/", "model: anthropic/"),
		u.srvs["p1"].URL, u.srvs["p2"].URL, u.srvs["b1"].URL, u.srvs["l1"].URL, u.srvs["s1"].URL, "")
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	log := slog.New(slog.DiscardHandler)
	rt := router.New(cfg, router.Options{
		Cooldowns: cooldown.NewMemory(),
		Sleep:     func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		Rand:      func() float64 { return 0 },
		Logger:    log,
	})
	client := providers.NewHTTPClient()
	t.Cleanup(client.CloseIdleConnections)
	return gateway.New(gateway.Options{Config: cfg, Router: rt, Provider: providers.New(client), Logger: log}), u
}

func TestFaultMatrixAnthropic(t *testing.T) {
	type want struct {
		attempts     []attempt
		status       int
		code         string // error type of the final event of a broken stream
		retries, fbs string
	}
	served := func(as []attempt, retries, fbs string) want {
		return want{attempts: as, status: 200, retries: retries, fbs: fbs}
	}
	for _, tc := range []struct {
		fault  fault
		stream bool
		want   want
	}{
		{f429, false, served(seq(pp, bk), "1", "1")},
		{f429, true, served(seq(pp, bk), "1", "1")},
		{f500, false, served(seq(pp, bk), "1", "1")},
		{f500, true, served(seq(pp, bk), "1", "1")},
		{f503, false, served(seq(pp, bk), "1", "1")}, // 529 overloaded
		{f503, true, served(seq(pp, bk), "1", "1")},
		{fTimeout, false, served(seq(pp, bk), "1", "1")},
		{fTimeout, true, served(seq(pp, bk), "1", "1")},
		{fReset, false, served(seq(pp, bk), "1", "1")},
		{fReset, true, served(seq(pp, bk), "1", "1")},
		{fContextWindow, false, served(seq(pp[0], lg), "0", "1")},
		{fContextWindow, true, served(seq(pp[0], lg), "0", "1")},
		{fCutBeforeFirst, false, served(seq(pp, bk), "1", "1")},
		{fCutBeforeFirst, true, served(seq(pp, bk), "1", "1")},
		{fEndBeforeFirst, true, served(seq(pp, bk), "1", "1")},
		{fErrorFirst, true, served(seq(pp, bk), "1", "1")},
		{fCutAfterFirst, false, served(seq(pp, bk), "1", "1")},
		{fCutAfterFirst, true, want{attempts: seq(pp[0]), status: 200, code: "stream_broken", retries: "0", fbs: "0"}},
		{fErrorAfterFirst, true, want{attempts: seq(pp[0]), status: 200, code: "overloaded_error", retries: "0", fbs: "0"}},
	} {
		t.Run(fmt.Sprintf("%s/stream=%v", tc.fault, tc.stream), func(t *testing.T) {
			h, u := anthropicFaultGateway(t)
			u.set(tc.fault, "p1", "p2")
			rep := call(t, h, fmt.Sprintf(`{"model":"primary","messages":[{"role":"user","content":"hi"}],"stream":%v}`, tc.stream))
			assertAttempts(t, u, tc.want.attempts)
			last := tc.want.attempts[len(tc.want.attempts)-1]
			if rep.status != tc.want.status {
				t.Fatalf("status %d, want %d: %s", rep.status, tc.want.status, rep.body)
			}
			assertRouteHeaders(t, rep, last, tc.want.retries, tc.want.fbs)
			if tc.want.code != "" {
				if got := rep.content(); got != "Hello" {
					t.Fatalf("content %q, want Hello (no other model spliced in)", got)
				}
				final := rep.events[len(rep.events)-1]
				if got := gjson.Get(final, "error.code").String(); got != tc.want.code {
					t.Fatalf("final event %s, want an error event with code %s", final, tc.want.code)
				}
				return
			}
			if got, want := rep.content(), "Hello from "+last.Deployment; got != want {
				t.Fatalf("content %q, want %q", got, want)
			}
			if tc.stream && rep.events[len(rep.events)-1] != "[DONE]" {
				t.Fatalf("final event %q, want [DONE]", rep.events[len(rep.events)-1])
			}
		})
	}
}

// With disable_fallbacks, the client gets the status Anthropic's error
// stands for.
func TestFaultAnthropicStatuses(t *testing.T) {
	for _, tc := range []struct {
		fault  fault
		stream bool
		status int
		code   string
	}{
		{f429, false, 429, "upstream_rate_limited"},
		{f503, false, 503, "upstream_server_error"},
		{f503, true, 503, "upstream_server_error"},
		{fErrorFirst, true, 503, "upstream_server_error"},
		{f500, true, 502, "upstream_server_error"},
		{fContextWindow, false, 400, "context_length_exceeded"},
	} {
		t.Run(fmt.Sprintf("%s/stream=%v", tc.fault, tc.stream), func(t *testing.T) {
			h, u := anthropicFaultGateway(t)
			u.set(tc.fault, "p1", "p2")
			rep := call(t, h, fmt.Sprintf(`{"model":"primary","messages":[{"role":"user","content":"hi"}],"stream":%v,"disable_fallbacks":true}`, tc.stream))
			if rep.status != tc.status || gjson.Get(rep.body, "error.code").String() != tc.code {
				t.Fatalf("status %d, want %d %s: %s", rep.status, tc.status, tc.code, rep.body)
			}
		})
	}
}
