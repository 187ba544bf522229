package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
)

// recording is an upstream that answers a completion and keeps the bodies
// it received.
type recording struct {
	bodies providerstest.Log[string]
	srv    *gatewaytest.Counter
}

func newRecording(t *testing.T, delay time.Duration) *recording {
	rec := &recording{srv: &gatewaytest.Counter{}}
	rec.srv.Server = gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.bodies.Add(string(b))
		rec.srv.Calls.Add(1)
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, completion)
	})
	return rec
}

func (rec *recording) calls() int64 { return rec.srv.Calls.Load() }

// LiteLLM's mock_testing_* switches fail the requested group as named,
// without calling its upstream and without cooling it down; the fallback
// is called, and the switches never reach any upstream (issue 20).
// mock_testing_rate_limit_error fails the first attempt alone
// (TestLiteLLMRetryHeaders).
func TestMockTestingSwitches(t *testing.T) {
	primary, backup := newRecording(t, 0), newRecording(t, 0)
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: p
    litellm_params: {model: openai/gpt-4o, api_key: k, api_base: %s}
  - model_name: b
    litellm_params: {model: openai/gpt-4o-mini, api_key: k, api_base: %s}
router_settings:
  num_retries: 1
  retry_after: 0
  allowed_fails: 0
  fallbacks: [{p: [b]}]
  context_window_fallbacks: [{p: [b]}]
  content_policy_fallbacks: [{p: [b]}]
`, primary.srv.URL, backup.srv.URL), nil)
	for _, tc := range []struct {
		field   string
		retries string // x-litellm-attempted-retries
	}{
		{"mock_testing_fallbacks", "1"},
		{"mock_testing_context_fallbacks", "0"},
		{"mock_testing_content_policy_fallbacks", "0"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			before := backup.calls()
			resp := f.post(t, "/v1/chat/completions", "", `{"model":"p","messages":[{"role":"user","content":"hi"}],"`+tc.field+`":true}`)
			out := gatewaytest.ReadAll(t, resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, out)
			}
			if primary.calls() != 0 || backup.calls() != before+1 {
				t.Errorf("upstream calls: primary %d, backup %d (was %d)", primary.calls(), backup.calls(), before)
			}
			if got := resp.Header.Get("X-Litellm-Attempted-Fallbacks"); got != "1" {
				t.Errorf("x-litellm-attempted-fallbacks = %q", got)
			}
			if got := resp.Header.Get("X-Litellm-Attempted-Retries"); got != tc.retries {
				t.Errorf("x-litellm-attempted-retries = %q, want %s", got, tc.retries)
			}
			if got := resp.Header.Get("X-Litellm-Model-Group"); got != "b" {
				t.Errorf("x-litellm-model-group = %q", got)
			}
		})
	}
	for _, b := range backup.bodies.All() {
		if strings.Contains(b, "mock_testing") {
			t.Errorf("a switch reached the upstream: %s", b)
		}
	}
	// The simulated failures cooled nothing down: the primary serves.
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"p","messages":[]}`)
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 200 || primary.calls() != 1 {
		t.Fatalf("primary after the switches: status %d, calls %d: %s", resp.StatusCode, primary.calls(), out)
	}
}

// The request's timeout (body timeout, or the x-litellm-timeout header,
// which wins) bounds each attempt in place of the deployment's, and is
// echoed as x-litellm-timeout (issue 20).
func TestRequestTimeout(t *testing.T) {
	slow := newRecording(t, 5*time.Second)
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: slow
    litellm_params: {model: openai/gpt-4o, api_key: k, api_base: %s, timeout: 60}
router_settings: {num_retries: 0, disable_cooldowns: true}
`, slow.srv.URL), nil)
	post := func(body, header string, stream ...bool) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(body))
		name := "x-litellm-timeout"
		if len(stream) > 0 {
			name = "x-litellm-stream-timeout"
		}
		if header != "" {
			req.Header.Set(name, header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp, gatewaytest.ReadAll(t, resp.Body)
	}
	for _, tc := range []struct {
		name, body, header, want string
	}{
		{"body", `{"model":"slow","messages":[],"timeout":0.2}`, "", "0.2"},
		{"header", `{"model":"slow","messages":[]}`, "0.2", "0.2"},
		{"header wins", `{"model":"slow","messages":[],"timeout":60}`, "0.2", "0.2"},
		{"stream", `{"model":"slow","messages":[],"stream":true,"timeout":"0.2"}`, "", "0.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, out := post(tc.body, tc.header)
			if resp.StatusCode != http.StatusGatewayTimeout {
				t.Fatalf("status %d, want 504: %s", resp.StatusCode, out)
			}
			if got := resp.Header.Get("X-Litellm-Timeout"); got != tc.want {
				t.Errorf("x-litellm-timeout = %q, want %q", got, tc.want)
			}
		})
	}
	// stream_timeout (body, or x-litellm-stream-timeout) bounds a
	// stream's first chunk, whatever the timeout.
	for _, tc := range []struct{ name, body, header string }{
		{"stream_timeout", `{"model":"slow","messages":[],"stream":true,"stream_timeout":0.2,"timeout":60}`, ""},
		{"x-litellm-stream-timeout", `{"model":"slow","messages":[],"stream":true}`, "0.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if resp, out := post(tc.body, tc.header, true); resp.StatusCode != http.StatusGatewayTimeout {
				t.Fatalf("status %d, want 504: %s", resp.StatusCode, out)
			}
		})
	}
	resp, out := post(`{"model":"slow","messages":[]}`, "soon")
	if resp.StatusCode != 400 || !strings.Contains(out, "x-litellm-timeout") {
		t.Errorf("bad header: status %d: %s", resp.StatusCode, out)
	}
	resp, out = post(`{"model":"slow","messages":[]}`, "-1", true)
	if resp.StatusCode != 400 || !strings.Contains(out, "x-litellm-stream-timeout") {
		t.Errorf("bad header: status %d: %s", resp.StatusCode, out)
	}
	for _, b := range slow.bodies.All() {
		if strings.Contains(b, "timeout") {
			t.Errorf("timeout reached the upstream: %s", b)
		}
	}
}

// A deployment with mock_timeout fails each call as a timeout after its
// timeout, without calling the provider, and its retries are
// litellm_params.num_retries (issue 20).
func TestDeploymentMockTimeout(t *testing.T) {
	up := newRecording(t, 0)
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: bad
    litellm_params: {model: openai/gpt-4o, api_key: k, api_base: %s, mock_timeout: true, timeout: 0.05, num_retries: 2}
router_settings: {num_retries: 0, disable_cooldowns: true, retry_after: 0}
`, up.srv.URL), nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"bad","messages":[]}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(out, "mock timeout") {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	if up.calls() != 0 {
		t.Errorf("the provider was called %d times", up.calls())
	}
	if got := resp.Header.Get("X-Litellm-Attempted-Retries"); got != "2" {
		t.Errorf("x-litellm-attempted-retries = %q, want 2 (the deployment's num_retries)", got)
	}
}

// An Azure deployment without api_base loads (LiteLLM's own example config
// has them) and reads AZURE_API_BASE; with it unset, a call fails naming
// the variable (issue 20).
func TestAzureWithoutBase(t *testing.T) {
	up := newRecording(t, 0)
	yaml := "model_list:\n  - model_name: az\n    litellm_params: {model: azure/dep}\nrouter_settings: {num_retries: 0}\n"
	f := newFixture(t, yaml, nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"az","messages":[]}`)
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode < 500 || !strings.Contains(out, "AZURE_API_BASE") {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	f = newFixture(t, yaml, map[string]string{"AZURE_API_BASE": up.srv.URL, "AZURE_API_KEY": "k"})
	resp = f.post(t, "/v1/chat/completions", "", `{"model":"az","messages":[]}`)
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 200 || up.calls() != 1 {
		t.Fatalf("with AZURE_API_BASE: status %d, calls %d: %s", resp.StatusCode, up.calls(), out)
	}
}
