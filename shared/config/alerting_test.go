package config

import (
	"strings"
	"testing"
	"time"
)

// TestAlerting reads LiteLLM's alerting keys: channels, types, the Slack
// webhook URLs per alert type (os.environ/ resolved) and budget_alert_ttl;
// unsupported channels, types and args are warned of; AlertingOf reads the
// same without the rest of the config.
func TestAlerting(t *testing.T) {
	yml := `
model_list:
  - model_name: m
    litellm_params: {model: openai/gpt-4o, api_key: sk-x}
general_settings:
  alerting: ["slack", "webhook", "email"]
  alert_types: ["budget_alerts", "llm_exceptions"]
  alert_to_webhook_url:
    budget_alerts: ["os.environ/BUDGET_HOOK", "https://hooks.slack.test/2"]
    llm_exceptions: https://hooks.slack.test/3
  alerting_args:
    budget_alert_ttl: 3600
    daily_report_frequency: 43200
  alerting_threshold: 300
`
	env := func(k string) (string, bool) {
		if k == "BUDGET_HOOK" {
			return "https://hooks.slack.test/1", true
		}
		return "", false
	}
	c, err := Load([]byte(yml), env)
	if err != nil {
		t.Fatal(err)
	}
	a := c.General.Alerting
	if !a.On("slack") || !a.On("webhook") || a.On("email") || !a.Wants("budget_alerts") || a.Wants("daily_reports") {
		t.Errorf("alerting = %+v", a)
	}
	if got := strings.Join(a.AlertToWebhookURL["budget_alerts"], " "); got != "https://hooks.slack.test/1 https://hooks.slack.test/2" {
		t.Errorf("budget_alerts urls = %q", got)
	}
	if a.BudgetAlertTTL != time.Hour {
		t.Errorf("budget_alert_ttl = %v", a.BudgetAlertTTL)
	}
	var warned []string
	for _, w := range c.Warnings {
		warned = append(warned, w.String())
	}
	all := strings.Join(warned, "\n")
	for _, want := range []string{`"email" is not supported`, "llm_exceptions ignored", "alerting_args.daily_report_frequency", "alerting_threshold"} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning with %q in:\n%s", want, all)
		}
	}
	only, err := AlertingOf([]byte(yml), env)
	if err != nil {
		t.Fatal(err)
	}
	if !only.On("slack") || only.BudgetAlertTTL != time.Hour || len(only.AlertToWebhookURL["budget_alerts"]) != 2 {
		t.Errorf("AlertingOf = %+v", only)
	}
	if _, err := Load([]byte(strings.Replace(yml, "3600", "0.1", 1)), env); err == nil {
		t.Error("budget_alert_ttl 0.1 s accepted")
	}
}
