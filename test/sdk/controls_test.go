package sdk

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// LiteLLM's request controls through the official SDK, as its users send
// them (extra body fields and headers): a mock_testing_* switch makes the
// requested group fail as named so the fallback answers; the request's
// timeout (x-litellm-timeout) bounds the attempt and is echoed (issue 20).
func TestRequestControls(t *testing.T) {
	slow := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
		}
	})
	s := startServerT(t, `
model_list:
  - model_name: primary
    litellm_params: {model: mock/primary}
  - model_name: backup
    litellm_params: {model: mock/backup}
  - model_name: slow
    litellm_params: {model: openai/gpt-4o-mini, api_key: k, api_base: `+slow.URL+`/v1, timeout: 60}
router_settings:
  num_retries: 0
  fallbacks: [{primary: [backup]}]
  context_window_fallbacks: [{primary: [backup]}]
`)
	client := newClient(s)
	for _, field := range []string{"mock_testing_fallbacks", "mock_testing_context_fallbacks"} {
		t.Run(field, func(t *testing.T) {
			var raw *http.Response
			resp, err := client.Chat.Completions.New(testContext(t), chatParams("primary"),
				option.WithJSONSet(field, true), option.WithResponseInto(&raw))
			if err != nil {
				t.Fatalf("chat completion: %v", err)
			}
			if got := resp.Choices[0].Message.Content; !strings.Contains(got, "backup") {
				t.Errorf("content = %q, want the backup group's answer", got)
			}
			if raw.Header.Get("X-Litellm-Model-Group") != "backup" || raw.Header.Get("X-Litellm-Attempted-Fallbacks") != "1" {
				t.Errorf("headers: group %q, fallbacks %q", raw.Header.Get("X-Litellm-Model-Group"), raw.Header.Get("X-Litellm-Attempted-Fallbacks"))
			}
		})
	}
	t.Run("x-litellm-timeout", func(t *testing.T) {
		// The deployment waits 60 s and the upstream 10 s: a 504 here is
		// the request's own 0.3 s.
		_, err := client.Chat.Completions.New(testContext(t), chatParams("slow"), option.WithHeader("x-litellm-timeout", "0.3"))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("err = %v, want a 504", err)
		}
		if got := apiErr.Response.Header.Get("X-Litellm-Timeout"); got != "0.3" {
			t.Errorf("x-litellm-timeout = %q", got)
		}
	})
}
