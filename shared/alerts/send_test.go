package alerts

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keys"
)

// TestWebhookBody: the webhook gets LiteLLM's WebhookEvent: the record's
// own id in its field, the event and group names, spend in USD.
func TestWebhookBody(t *testing.T) {
	max := 10.0
	a := Alert{Ref: keys.Ref{Kind: keys.KindTeam, ID: "t1"}, Threshold: Max, Spend: 12_500_000_000, MaxBudget: &max,
		Info: Info{Token: "abc", KeyAlias: "k", TeamID: "other", UserID: "u", OrganizationID: "o"}}
	b, err := webhookBody(&a)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"event": "budget_crossed", "event_group": "team", "team_id": "t1", "token": "abc", "key_alias": "k",
		"user_id": "u", "organization_id": "o", "spend": 12.5, "max_budget": 10.0, "event_message": "Team Budget: Budget Crossed\n Total Budget:`10`",
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if v, ok := got["projected_spend"]; !ok || v != nil {
		t.Errorf("projected_spend = %v (present %v), want null", v, ok)
	}
	if v, ok := got["customer_id"]; ok {
		t.Errorf("customer_id = %v, want none", v)
	}
	soft := 1.0
	s := Alert{Ref: keys.Ref{Kind: keys.KindOrg, ID: "o"}, Threshold: Soft, SoftBudget: &soft}
	if s.Event() != "soft_budget_crossed" || !strings.HasPrefix(s.Message(), "Soft Budget Crossed: Organization Budget") {
		t.Errorf("soft: %s, %q", s.Event(), s.Message())
	}
}

// TestEvaluate: LiteLLM's thresholds from the spend of the period that
// contains the call, the highest of max_budget's alone; nothing when the
// record's period is an older one.
func TestEvaluate(t *testing.T) {
	soft, max := 0.5, 1.0
	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	ref := keys.Ref{Kind: keys.KindKey, ID: "h"}
	day := keys.PeriodStart("1d", at)
	for _, tt := range []struct {
		spent int64
		start time.Time
		want  string
	}{
		{400_000_000, day, ""},
		{500_000_000, day, "soft"},
		{860_000_000, day, "soft 85pct"},
		{950_000_000, day, "soft 95pct"},
		{1_000_000_000, day, "soft max"},
		{2_000_000_000, day.AddDate(0, 0, -1), ""}, // yesterday's spend: nothing this period
	} {
		rs := keys.RecordSpend{Budget: keys.Budget{SoftBudget: &soft, MaxBudget: &max, Duration: "1d"},
			State: keys.SpendState{Total: tt.spent, PeriodStart: tt.start, Period: tt.spent}}
		var got []string
		for _, a := range Evaluate(ref, rs, at, 0) {
			got = append(got, string(a.Threshold))
			if !a.Period.Equal(day) || !a.End.Equal(day.AddDate(0, 0, 1)) {
				t.Errorf("period %v..%v", a.Period, a.End)
			}
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("spent %d: %v, want %q", tt.spent, got, tt.want)
		}
	}
	// No budget_duration: lifetime spend, the budget_alert_ttl window.
	rs := keys.RecordSpend{Budget: keys.Budget{MaxBudget: &max}, State: keys.SpendState{Total: 1_000_000_000}}
	as := Evaluate(ref, rs, at, time.Hour)
	if len(as) != 1 || as[0].Threshold != Max || !as[0].Period.Equal(at.Truncate(time.Hour)) || as[0].ID("d") == Evaluate(ref, rs, at.Add(time.Hour), time.Hour)[0].ID("d") {
		t.Errorf("lifetime budget: %+v", as)
	}
}

// TestDestinations: Slack from alert_to_webhook_url, else
// SLACK_WEBHOOK_URL; the webhook from WEBHOOK_URL; a channel without its
// URL is a problem, not a destination; no budget_alerts, nothing.
func TestDestinations(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	a := config.Alerting{Channels: []string{"slack", "webhook"}}
	d, p := DestinationsOf(a, env(map[string]string{"SLACK_WEBHOOK_URL": "https://s", "WEBHOOK_URL": "https://w"}))
	if len(d) != 2 || d[0].URL != "https://s" || d[1].URL != "https://w" || len(p) != 0 || !strings.HasPrefix(d[0].Name, "slack:") {
		t.Errorf("%+v %v", d, p)
	}
	a.AlertToWebhookURL = map[string][]string{"budget_alerts": {"https://a", "https://b"}}
	d, p = DestinationsOf(a, env(nil))
	if len(d) != 2 || d[0].URL != "https://a" || d[1].URL != "https://b" || len(p) != 1 || !strings.Contains(p[0], "WEBHOOK_URL") {
		t.Errorf("%+v %v", d, p)
	}
	if d[0].Name == d[1].Name {
		t.Error("two Slack URLs share a claim destination")
	}
	if d, _ := DestinationsOf(config.Alerting{Channels: []string{"slack"}, AlertTypes: []string{"llm_exceptions"}}, env(map[string]string{"SLACK_WEBHOOK_URL": "https://s"})); len(d) != 0 {
		t.Errorf("budget alerts off, yet %+v", d)
	}
}

// TestSendErrorHidesURL: a failed post's error names the destination, not
// its URL (a Slack webhook URL is a credential).
func TestSendErrorHidesURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	url := srv.URL + "/services/T000/B000/secretpart"
	srv.Close() // refused from now on
	a := Alert{Ref: keys.Ref{Kind: keys.KindKey, ID: "h"}, Threshold: Max}
	err := post(context.Background(), http.DefaultClient, Slack(url), &a)
	if err == nil || strings.Contains(err.Error(), "secretpart") {
		t.Errorf("error %v", err)
	}
}
