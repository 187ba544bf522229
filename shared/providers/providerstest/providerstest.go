// Package providerstest holds test support the provider translations
// share: the chat request their benchmarks translate, the check that a
// translation's refusal is a 400, and the run and check of how a provider
// classifies its upstream's errors.
package providerstest

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// BenchRequest is the OpenAI chat request the translation benchmarks
// translate, asking for model: a system prompt, a user turn, a tool,
// tool_choice, a temperature and a stream with usage.
func BenchRequest(model string) string {
	return `{"model":"` + model + `","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about the sea, and tell me the weather in Paris."}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}],"tool_choice":"auto","temperature":0.7,"stream":true,"stream_options":{"include_usage":true}}`
}

// BenchTranslateRequest benchmarks translate on BenchRequest(model), the
// body converted to bytes in each iteration as a handler receives it anew.
func BenchTranslateRequest[T any](b *testing.B, model string, translate func(body []byte) (T, error)) {
	req := BenchRequest(model)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := translate([]byte(req)); err != nil {
			b.Fatal(err)
		}
	}
}

// Refused reports whether a translation refused its input (err != nil),
// failing t unless the refusal is a 400: an *apierr.Error of kind
// InvalidRequest with a message.
func Refused(t testing.TB, err error) bool {
	t.Helper()
	if err == nil {
		return false
	}
	var e *apierr.Error
	if !errors.As(err, &e) || e.Kind != apierr.InvalidRequest || e.Message == "" {
		t.Fatalf("error %v is not a 400", err)
	}
	return true
}

// Upstream is an http.RoundTripper answering every request with Status and
// Body (as an event stream), for the fuzz tests that feed a vendor any
// upstream bytes.
type Upstream struct {
	Status int
	Body   []byte
}

// RoundTrip implements http.RoundTripper.
func (u Upstream) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	return &http.Response{StatusCode: u.Status, Status: http.StatusText(u.Status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(u.Body)), ContentLength: -1, Request: r}, nil
}

// ErrorCase is an upstream failure and how a provider must classify it.
type ErrorCase struct {
	Name   string
	Status int    // the upstream's status
	Body   string // the upstream's body (or what the test's fake reads it from)
	Stream bool   // whether the client asks for a stream
	Kind   apierr.Kind
	Code   int // the client's status; 0: not checked
}

// Errors runs each case as a subtest: do sends a request (a stream when
// c.Stream) to an upstream failing as c says, and the call must fail as
// UpstreamError checks, of c.Kind and c.Code, quoting none of secrets.
func Errors(t *testing.T, cases []ErrorCase, do func(t *testing.T, c ErrorCase) (*http.Response, error), secrets ...string) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Helper()
			resp, err := do(t, c)
			UpstreamError(t, resp, err, c.Kind, c.Code, secrets...)
		})
	}
}

// UpstreamError fails t unless a provider's call (resp, err) failed with
// an *apierr.Error of kind (and of the client's status code, unless code
// is 0) that is the deployment's fault, not the request's own (a missing
// model a deployment names is its own), and whose message quotes none of
// secrets (the deployment's keys).
func UpstreamError(t testing.TB, resp *http.Response, err error, kind apierr.Kind, code int, secrets ...string) {
	t.Helper()
	if err == nil {
		resp.Body.Close()
		t.Fatal("no error")
	}
	var e *apierr.Error
	if !errors.As(err, &e) || e.Kind != kind || (code != 0 && e.HTTPStatus() != code) {
		t.Fatalf("err %v (%#v), want kind %v status %d", err, err, kind, code)
	}
	if e.Own {
		t.Fatalf("the deployment's failure is taken for the request's own: %+v", e)
	}
	for _, s := range secrets {
		if strings.Contains(e.Message, s) {
			t.Fatalf("message %q quotes a secret", e.Message)
		}
	}
}
