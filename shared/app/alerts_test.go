package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/alerts/alertstest"
	"github.com/sluice-gw/sluice/shared/keys"
)

// TestLocalBudgetAlerts: local mode (memory store, in-process queue) with
// general_settings.alerting [slack] and SLACK_WEBHOOK_URL sends one Slack
// message when a key's spend crosses its soft budget, however many calls
// cross it after, and none without budget_alerts in alert_types.
func TestLocalBudgetAlerts(t *testing.T) {
	up, _ := upstream(t, 200)
	for _, tt := range []struct {
		types string
		want  int
	}{{"", 1}, {"alert_types: [budget_alerts]", 1}, {"alert_types: [llm_exceptions]", 0}} {
		t.Run(tt.types, func(t *testing.T) {
			slack := alertstest.NewSlack(t)
			yaml := fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s/v1, api_key: k, input_cost_per_token: 0.1, output_cost_per_token: 0.1}
general_settings:
  master_key: sk-master
  alerting: [slack]
  %s
`, up.URL, tt.types)
			gw, err := buildFromEnv(t, yaml, map[string]string{"SLACK_WEBHOOK_URL": slack.URL})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			secret := "sk-alerted-key"
			soft := 1.0
			if err := gw.Keys.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secret), Settings: keys.Settings{Budget: keys.Budget{SoftBudget: &soft}}}); err != nil {
				t.Fatal(err)
			}
			for range 4 { // 0.6 USD each: the second crosses 1 USD
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
				req.Header.Set("Authorization", "Bearer "+secret)
				rec := httptest.NewRecorder()
				gw.Handler.ServeHTTP(rec, req)
				if rec.Code != 200 {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				if err := gw.SpendQueue.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := gw.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if got := slack.Count("Soft Budget Crossed: Key Budget", keys.HashSecret(secret)); got != tt.want || len(slack.Messages()) != tt.want {
				t.Errorf("%d soft budget messages (%d in all), want %d: %q", got, len(slack.Messages()), tt.want, slack.Messages())
			}
		})
	}
}
