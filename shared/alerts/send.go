package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keys"
)

// Destination is where an alert is posted: a Slack incoming webhook or
// LiteLLM's generic webhook (WEBHOOK_URL).
type Destination struct {
	Name string // "slack:<digest>" or "webhook:<digest>": part of the claim id
	URL  string
	Body func(a *Alert) ([]byte, error)
}

// Slack returns the destination of a Slack incoming webhook: {"text": ...}
// in LiteLLM's layout ("Level: `High`\nTimestamp: ...\n\nMessage: ...").
func Slack(url string) Destination {
	return Destination{Name: destName("slack", url), URL: url, Body: slackBody}
}

// Webhook returns the destination of LiteLLM's generic webhook: its
// WebhookEvent JSON.
func Webhook(url string) Destination {
	return Destination{Name: destName("webhook", url), URL: url, Body: webhookBody}
}

func slackBody(a *Alert) ([]byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Level: `High`\nTimestamp: `%s`\n\nMessage: %s\n\n", a.At.UTC().Format("15:04:05"), a.Message())
	ev := webhookEvent(a)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "\n%s: `%s`", k, v)
		}
	}
	line("spend", fmt.Sprint(ev.Spend))
	line("max_budget", usd(a.MaxBudget))
	line("soft_budget", usd(a.SoftBudget))
	line("token", ev.Token)
	line("key_alias", ev.KeyAlias)
	line("user_id", ev.UserID)
	line("team_id", ev.TeamID)
	line("organization_id", ev.OrganizationID)
	line("customer_id", ev.CustomerID)
	return json.Marshal(map[string]string{"text": b.String()})
}

// event is LiteLLM's WebhookEvent (CallInfo and the event fields).
type event struct {
	Spend      float64  `json:"spend"`
	MaxBudget  *float64 `json:"max_budget"`
	SoftBudget *float64 `json:"soft_budget,omitempty"`
	Info                // token, key_alias, user_id, team_id, organization_id
	CustomerID string   `json:"customer_id,omitempty"`
	UserEmail  *string  `json:"user_email"`
	// ProjectedExceededDate and ProjectedSpend are LiteLLM's projection
	// fields: never computed here, null.
	ProjectedExceededDate *string  `json:"projected_exceeded_date"`
	ProjectedSpend        *float64 `json:"projected_spend"`
	Event                 string   `json:"event"`
	EventGroup            string   `json:"event_group"`
	EventMessage          string   `json:"event_message"`
}

func webhookEvent(a *Alert) event {
	e := event{
		Spend: keys.USD(a.Spend), MaxBudget: a.MaxBudget, SoftBudget: a.SoftBudget, Info: a.Info,
		Event: a.Event(), EventGroup: group(a.Ref.Kind), EventMessage: a.Message(),
	}
	switch a.Ref.Kind { // the record's own id, whatever the call named
	case keys.KindKey:
		e.Token = a.Ref.ID
	case keys.KindTeam:
		e.TeamID = a.Ref.ID
	case keys.KindUser:
		e.UserID = a.Ref.ID
	case keys.KindOrg:
		e.OrganizationID = a.Ref.ID
	case keys.KindEndUser:
		e.CustomerID = a.Ref.ID
	}
	return e
}

func webhookBody(a *Alert) ([]byte, error) { return json.Marshal(webhookEvent(a)) }

// post sends one alert to d; a 2xx answer is success.
func post(ctx context.Context, client *http.Client, d Destination, a *Alert) error {
	body, err := d.Body(a)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("alert to %s: %w", d.Name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL: a Slack webhook URL is a secret
		}
		return fmt.Errorf("alert to %s: %w", d.Name, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("alert to %s: status %d", d.Name, resp.StatusCode)
	}
	return nil
}

// Environment variables of the destinations, as LiteLLM names them.
const (
	SlackURLEnv   = "SLACK_WEBHOOK_URL"
	WebhookURLEnv = "WEBHOOK_URL"
)

// DestinationsOf returns the destinations of budget alerts a config's
// alerting names: Slack (alert_to_webhook_url's budget_alerts URLs, else
// SLACK_WEBHOOK_URL) and the webhook (WEBHOOK_URL), none unless
// alert_types includes budget_alerts (or is empty). problems says what is
// on but cannot be sent (a channel with no URL).
func DestinationsOf(a config.Alerting, getenv func(string) (string, bool)) (dests []Destination, problems []string) {
	if !a.Wants("budget_alerts") {
		return nil, nil
	}
	env := func(name string) string {
		if getenv == nil {
			return ""
		}
		v, _ := getenv(name)
		return strings.TrimSpace(v)
	}
	if a.On("slack") {
		urls := a.AlertToWebhookURL["budget_alerts"]
		if len(urls) == 0 && env(SlackURLEnv) != "" {
			urls = []string{env(SlackURLEnv)}
		}
		if len(urls) == 0 {
			problems = append(problems, "alerting slack: no "+SlackURLEnv+" (nor alert_to_webhook_url.budget_alerts); budget alerts are not sent to Slack")
		}
		for _, u := range urls {
			if u != "" {
				dests = append(dests, Slack(u))
			}
		}
	}
	if a.On("webhook") {
		if u := env(WebhookURLEnv); u != "" {
			dests = append(dests, Webhook(u))
		} else {
			problems = append(problems, "alerting webhook: no "+WebhookURLEnv+"; budget alerts are not sent to a webhook")
		}
	}
	return dests, problems
}
