package adminapi_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
)

// TestTeamCallbacks: POST /team/{id}/callback stores a team's callback in
// its metadata.logging (the spend consumer reads it there), a second of
// the same name and type or an unknown name is a 400; GET lists it; no
// response (the callback routes, /team/info, /key/info) nor log line shows
// a credential of callback_vars; /active/callbacks lists the config's.
func TestTeamCallbacks(t *testing.T) {
	for _, store := range []string{app.StoreMemory, app.StoreDynamoDB} {
		t.Run(store, func(t *testing.T) {
			var logs bytes.Buffer
			gw := buildWith(t, suiteConfig+"litellm_settings:\n  success_callback: [langfuse]\n  callbacks: [generic_api]\n", store,
				slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			c := client{t, gw.HTTP}
			const m = "sk-master-test"
			c.must(m, "POST", "/team/new", `{"team_id":"tc"}`)
			const secret = "sk-lf-very-secret-0042"
			var raws []string
			_, _, raw := c.call(m, "POST", "/team/tc/callback", `{"callback_name":"langfuse","callback_type":"success","callback_vars":{"langfuse_public_key":"pk-lf-1","langfuse_secret_key":"`+secret+`","langfuse_host":"https://lf.example"}}`)
			raws = append(raws, raw)
			c.errParam(m, "POST", "/team/tc/callback", `{"callback_name":"langfuse","callback_type":"success","callback_vars":{}}`, 400, "callback_name")
			c.errParam(m, "POST", "/team/tc/callback", `{"callback_name":"datadog"}`, 400, "callback_name")
			c.errParam(m, "POST", "/team/tc/callback", `{"callback_name":"s3","callback_type":"sometimes"}`, 400, "callback_type")
			c.errParam(m, "POST", "/team/nope/callback", `{"callback_name":"s3"}`, 404, "")
			got := c.must(m, "GET", "/team/tc/callback", "")
			data, _ := got["data"].(map[string]any)
			vars, _ := data["callback_vars"].(map[string]any)
			if s, _ := data["success_callbacks"].([]any); len(s) != 1 || s[0] != "langfuse" || vars["langfuse_host"] != "https://lf.example" || vars["langfuse_secret_key"] != "***REDACTED***" {
				t.Errorf("GET callback = %v", got)
			}
			_, _, raw = c.call(m, "GET", "/team/info?team_id=tc", "")
			raws = append(raws, raw)
			_, key, _ := c.call(m, "POST", "/key/generate", `{"team_id":"tc","metadata":{"logging":[{"callback_name":"generic_api","callback_type":"failure","callback_vars":{"generic_logger_headers":"Authorization=Bearer `+secret+`"}}]}}`)
			_, _, raw = c.call(m, "GET", "/key/info?key="+key["key"].(string), "")
			raws = append(raws, raw)
			for _, r := range append(raws, logs.String()) {
				if strings.Contains(r, secret) {
					t.Errorf("a callback secret is shown: %s", r)
				}
			}
			if !strings.Contains(raws[0], `"callback_name":"langfuse"`) || !strings.Contains(raws[2], `"generic_logger_headers":"***REDACTED***"`) {
				t.Errorf("the callbacks are not shown (masked):\n%s\n%s", raws[0], raws[2])
			}
			a := c.must(m, "GET", "/active/callbacks", "")
			all, _ := a["all_litellm_callbacks"].([]any)
			if succ, _ := a["litellm.success_callback"].([]any); len(succ) != 1 || succ[0] != "langfuse" || a["num_callbacks"] != float64(len(all)) || len(all) != 5 {
				t.Errorf("active callbacks = %v", a)
			}
		})
	}
}

// TestActiveCallbacksAlerting: /active/callbacks lists the otel callback
// and the alerting channels (LiteLLM's "alerting" and "num_alerting");
// with no alerting, "alerting" is null and "num_alerting" 0.
func TestActiveCallbacksAlerting(t *testing.T) {
	for _, tt := range []struct {
		extra    string
		alerting string
		n        float64
	}{
		{"  alerting: [slack, webhook]\n", "[slack webhook]", 2},
		{"", "<nil>", 0},
	} {
		yaml := suiteConfig + tt.extra + "litellm_settings:\n  callbacks: [otel]\n" // extra: more general_settings
		gw := buildWith(t, yaml, app.StoreMemory, nil)
		a := client{t, gw.HTTP}.must("sk-master-test", "GET", "/active/callbacks", "")
		if got := fmt.Sprint(a["alerting"]); got != tt.alerting || a["num_alerting"] != tt.n {
			t.Errorf("alerting %s, num_alerting %v; want %s, %v", got, a["num_alerting"], tt.alerting, tt.n)
		}
		if cbs := fmt.Sprint(a["litellm.callbacks"]); cbs != "[otel]" {
			t.Errorf("litellm.callbacks = %s, want [otel]", cbs)
		}
	}
}
