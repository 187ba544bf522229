package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
)

// The fault matrix: every upstream failure class, streamed and not, served
// through the gateway handler over real HTTP to fake upstreams (one per
// deployment: OpenAI's, Anthropic's, Bedrock's), asserting the exact
// attempts and what the client gets. This file is the harness; the
// matrices are in faults_<vendor>_test.go.

// fault is how an upstream misbehaves.
type fault string

const (
	healthy         fault = ""
	f429            fault = "429"
	f500            fault = "500"
	f503            fault = "503"
	fTimeout        fault = "timeout"
	fReset          fault = "connection reset"
	fContextWindow  fault = "context window"
	fContentPolicy  fault = "content policy"
	fCutBeforeFirst fault = "stream cut before the first chunk"
	fCutAfterFirst  fault = "stream cut after the first chunk"
	// fEndBeforeFirst ends the response cleanly after the role chunk: no
	// content, no [DONE].
	fEndBeforeFirst fault = "stream ended before the first chunk"
)

// attempt is one request an upstream received.
type attempt struct {
	Group, Deployment, Model string
}

// upstreams are fake OpenAI servers, one per deployment, that record every
// request they receive, in arrival order (attempts are sequential).
type upstreams struct {
	mu     sync.Mutex
	hits   []attempt
	faults map[string]fault
	srvs   map[string]*httptest.Server
	groups map[string]string
}

// newUpstreams starts one server per deployment of groups, each answering
// with serve (the OpenAI API, or a vendor's).
func newUpstreams(t *testing.T, groups map[string]string, serve func(u *upstreams, t *testing.T, id string, w http.ResponseWriter, r *http.Request)) *upstreams {
	u := &upstreams{faults: map[string]fault{}, srvs: map[string]*httptest.Server{}, groups: groups}
	for id := range groups {
		u.srvs[id] = gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) { serve(u, t, id, w, r) })
	}
	return u
}

// hit records a request to deployment id and returns its body, the model
// it asks for, and the deployment's fault.
func (u *upstreams) hit(id string, r *http.Request) (body []byte, model string, f fault) {
	body, _ = io.ReadAll(r.Body)
	model = gjson.GetBytes(body, "model").String()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.hits = append(u.hits, attempt{u.groups[id], id, model})
	return body, model, u.faults[id]
}

func (u *upstreams) set(f fault, ids ...string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, id := range ids {
		u.faults[id] = f
	}
}

func (u *upstreams) attempts() []attempt {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]attempt{}, u.hits...)
}

// vendorErrors are a vendor's error responses to faults, and the format of
// its error body (given the code and the message).
type vendorErrors struct {
	format string
	errs   map[fault]vendorError
}

type vendorError struct {
	status    int
	code, msg string
}

// misbehave answers the faults that come before any content: the vendor's
// error response, no answer at all (fTimeout: the deployment's timeout ends
// the call) or a closed connection (fReset). It reports whether f was one.
func misbehave(t *testing.T, f fault, w http.ResponseWriter, r *http.Request, v vendorErrors) bool {
	if e, ok := v.errs[f]; ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(e.status)
		fmt.Fprintf(w, v.format, e.code, e.msg)
		return true
	}
	switch f {
	case fTimeout:
		<-r.Context().Done()
	case fReset:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return true
		}
		conn.Close()
	default:
		return false
	}
	return true
}

// answer writes a whole JSON response (with its Content-Length if
// withLength), or under a cut fault half of it and a cut connection.
func answer(w http.ResponseWriter, f fault, withLength bool, out string) {
	w.Header().Set("Content-Type", "application/json")
	if withLength {
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	}
	if f == fCutBeforeFirst || f == fCutAfterFirst {
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, out[:len(out)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	io.WriteString(w, out)
}

// faultConfig: primary has two deployments (p1, p2); backup is the general
// fallback, long the context-window fallback, safe the content-policy one.
const faultConfig = `
model_list:
  - model_name: primary
    litellm_params: {model: openai/gpt-primary, api_base: "%[1]s", api_key: k, timeout: 1}
    model_info: {id: p1}
  - model_name: primary
    litellm_params: {model: openai/gpt-primary, api_base: "%[2]s", api_key: k, timeout: 1}
    model_info: {id: p2}
  - model_name: backup
    litellm_params: {model: openai/gpt-backup, api_base: "%[3]s", api_key: k, timeout: 1}
    model_info: {id: b1}
  - model_name: long
    litellm_params: {model: openai/gpt-long, api_base: "%[4]s", api_key: k}
    model_info: {id: l1}
  - model_name: safe
    litellm_params: {model: openai/gpt-safe, api_base: "%[5]s", api_key: k}
    model_info: {id: s1}
router_settings:
  num_retries: 1
  fallbacks: [{primary: [backup]}]
  context_window_fallbacks: [{primary: [long]}]
  content_policy_fallbacks: [{primary: [safe]}]
%[6]s`

var faultGroups = map[string]string{"p1": "primary", "p2": "primary", "b1": "backup", "l1": "long", "s1": "safe"}

// config is a fault configuration with the upstreams' URLs filled in.
func (u *upstreams) config(yaml, extraSettings string) string {
	return fmt.Sprintf(yaml, u.srvs["p1"].URL, u.srvs["p2"].URL, u.srvs["b1"].URL, u.srvs["l1"].URL, u.srvs["s1"].URL, extraSettings)
}

// faultHandler is the gateway over a configuration: rand fixed at 0 (the
// first candidate first), no backoff waits, a fresh cooldown store, the
// router's clock now (nil: the real one), quiet logs.
func faultHandler(t *testing.T, yaml string, now func() time.Time) *gateway.Handler {
	t.Helper()
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	log := gatewaytest.Quiet()
	rt := router.New(cfg, router.Options{
		Cooldowns: cooldown.NewMemory(),
		Sleep:     func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		Rand:      func() float64 { return 0 },
		Now:       now,
		Logger:    log,
	})
	client := providers.NewHTTPClient()
	t.Cleanup(client.CloseIdleConnections)
	return gateway.New(gateway.Options{Config: cfg, Router: rt, Provider: providers.New(client), Logger: log})
}

// reply is what the client got.
type reply struct {
	status int
	header http.Header
	body   string
	events []string // SSE data payloads, for streams
}

func call(t *testing.T, h http.Handler, body string) reply {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	rep := reply{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		for _, ev := range strings.Split(rep.body, "\n\n") {
			for _, line := range strings.Split(ev, "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					rep.events = append(rep.events, d)
				}
			}
		}
	}
	return rep
}

// content joins the text of a reply: the message, or the streamed deltas.
func (r reply) content() string {
	if r.events == nil {
		return gjson.Get(r.body, "choices.0.message.content").String()
	}
	var b strings.Builder
	for _, ev := range r.events {
		b.WriteString(gjson.Get(ev, "choices.0.delta.content").String())
	}
	return b.String()
}

var (
	pp = []attempt{{"primary", "p1", "gpt-primary"}, {"primary", "p2", "gpt-primary"}}
	bk = attempt{"backup", "b1", "gpt-backup"}
	lg = attempt{"long", "l1", "gpt-long"}
	sf = attempt{"safe", "s1", "gpt-safe"}
)

func seq(as ...any) []attempt {
	var out []attempt
	for _, a := range as {
		switch a := a.(type) {
		case attempt:
			out = append(out, a)
		case []attempt:
			out = append(out, a...)
		}
	}
	return out
}

// matrixWant is what a fault on the primary group's deployments leads to.
type matrixWant struct {
	attempts []attempt
	// status 200: served by the last attempt's deployment or, with code
	// set, a stream that broke after its first chunk and ends with an error
	// event of that code; otherwise the error's status.
	status  int
	code    string
	retries string // x-litellm-attempted-retries
	fbs     string // x-litellm-attempted-fallbacks
}

type matrixCase struct {
	fault  fault
	stream bool
	want   matrixWant
}

func served(as []attempt, retries, fbs string) matrixWant {
	return matrixWant{attempts: as, status: 200, retries: retries, fbs: fbs}
}

// brokenAfterFirst: output reached the client, so no retry and no
// fallback, and the stream ends with an error event of code.
func brokenAfterFirst(code string) matrixWant {
	return matrixWant{attempts: seq(pp[0]), status: 200, code: code, retries: "0", fbs: "0"}
}

// vendorMatrix are the cases every vendor's upstream leads to alike (a 503
// is Anthropic's 529 overloaded).
var vendorMatrix = []matrixCase{
	{f429, false, served(seq(pp, bk), "1", "1")},
	{f429, true, served(seq(pp, bk), "1", "1")},
	{f500, false, served(seq(pp, bk), "1", "1")},
	{f500, true, served(seq(pp, bk), "1", "1")},
	{f503, false, served(seq(pp, bk), "1", "1")},
	{f503, true, served(seq(pp, bk), "1", "1")},
	{fTimeout, false, served(seq(pp, bk), "1", "1")},
	{fTimeout, true, served(seq(pp, bk), "1", "1")},
	{fReset, false, served(seq(pp, bk), "1", "1")},
	{fReset, true, served(seq(pp, bk), "1", "1")},
	{fContextWindow, false, served(seq(pp[0], lg), "0", "1")},
	{fContextWindow, true, served(seq(pp[0], lg), "0", "1")},
	{fCutBeforeFirst, false, served(seq(pp, bk), "1", "1")},
	{fCutBeforeFirst, true, served(seq(pp, bk), "1", "1")},
	{fCutAfterFirst, false, served(seq(pp, bk), "1", "1")}, // a body cut half way: nothing was sent
	{fCutAfterFirst, true, brokenAfterFirst("stream_broken")},
}

// runFaultMatrix serves each case on a fresh gateway from build, with the
// case's fault on p1 and p2.
func runFaultMatrix(t *testing.T, build func(*testing.T) (*gateway.Handler, *upstreams), cases []matrixCase) {
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/stream=%v", tc.fault, tc.stream), func(t *testing.T) {
			h, u := build(t)
			u.set(tc.fault, "p1", "p2")
			rep := call(t, h, fmt.Sprintf(`{"model":"primary","messages":[{"role":"user","content":"hi"}],"stream":%v}`, tc.stream))
			assertAttempts(t, u, tc.want.attempts)
			last := tc.want.attempts[len(tc.want.attempts)-1]
			if rep.status != tc.want.status {
				t.Fatalf("status %d, want %d: %s", rep.status, tc.want.status, rep.body)
			}
			assertRouteHeaders(t, rep, last, tc.want.retries, tc.want.fbs)
			if tc.want.code != "" { // the stream broke after its first chunk
				if got, want := rep.content(), "Hello"; got != want {
					t.Fatalf("content %q, want %q (no other model spliced in)", got, want)
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

// statusCase is a fault on every deployment of the primary group, and the
// status and error code the client gets with disable_fallbacks.
type statusCase[F ~string] struct {
	fault  F
	stream bool
	status int
	code   string
}

// runStatuses serves each case on a fresh gateway from build, which also
// returns how to set a fault on the primary group's deployments.
func runStatuses[F ~string](t *testing.T, build func(*testing.T) (http.Handler, func(F)), cases []statusCase[F]) {
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/stream=%v", tc.fault, tc.stream), func(t *testing.T) {
			h, set := build(t)
			set(tc.fault)
			rep := call(t, h, fmt.Sprintf(`{"model":"primary","messages":[{"role":"user","content":"hi"}],"stream":%v,"disable_fallbacks":true}`, tc.stream))
			assertError(t, rep, tc.status, tc.code)
		})
	}
}

// assertError checks that the client got an error of status and code.
func assertError(t *testing.T, rep reply, status int, code string) {
	t.Helper()
	if rep.status != status || gjson.Get(rep.body, "error.code").String() != code {
		t.Fatalf("status %d, want %d %s: %s", rep.status, status, code, rep.body)
	}
}

func assertAttempts(t *testing.T, u *upstreams, want []attempt) {
	t.Helper()
	if got := u.attempts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("attempts:\n got  %v\n want %v", got, want)
	}
}

func assertRouteHeaders(t *testing.T, rep reply, last attempt, retries, fallbacks string) {
	t.Helper()
	got := map[string]string{}
	want := map[string]string{
		"x-litellm-model-id": last.Deployment, "x-litellm-model-group": last.Group,
		"x-litellm-attempted-retries": retries, "x-litellm-attempted-fallbacks": fallbacks,
	}
	for k := range want {
		got[k] = rep.header.Get(k)
	}
	if !reflect.DeepEqual(got, want) {
		b, _ := json.Marshal(got)
		t.Fatalf("route headers %s, want %v", b, want)
	}
	if rep.header.Get("x-litellm-call-id") == "" {
		t.Fatal("no x-litellm-call-id")
	}
}

// streamTo starts a 200 event stream on w; the func it returns writes an
// event's text and flushes it.
func streamTo(w http.ResponseWriter) func(text string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	return func(text string) {
		io.WriteString(w, text)
		w.(http.Flusher).Flush()
	}
}
