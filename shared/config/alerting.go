package config

import (
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Alerting is general_settings' alerting as LiteLLM writes it: the channels
// (alerting: ["slack", "webhook"]), the alert types (alert_types; empty:
// every type, LiteLLM's default), alert_to_webhook_url (a Slack webhook URL,
// or a list of them, per alert type) and alerting_args.budget_alert_ttl.
// The spend consumer sends the budget alerts (shared/alerts); the
// webhook URLs themselves come from SLACK_WEBHOOK_URL and WEBHOOK_URL.
type Alerting struct {
	Channels          []string            // "slack", "webhook"
	AlertTypes        []string            // empty: all
	AlertToWebhookURL map[string][]string // alert type -> Slack webhook URLs
	// BudgetAlertTTL (alerting_args.budget_alert_ttl, seconds): with no
	// budget_duration, a budget alert is sent at most once per this window
	// (LiteLLM's default: 24 hours); 0: that default.
	BudgetAlertTTL time.Duration
}

// On reports whether channel is among the channels.
func (a Alerting) On(channel string) bool { return slices.Contains(a.Channels, channel) }

// Wants reports whether alert type t is on (every type when AlertTypes is
// empty).
func (a Alerting) Wants(t string) bool {
	return len(a.AlertTypes) == 0 || slices.Contains(a.AlertTypes, t)
}

// alertChannels are the channels the spend consumer sends to; LiteLLM's
// others are warned of.
var alertChannels = []string{"slack", "webhook"}

// alertTypesSent are the alert types sent here; LiteLLM's others are
// accepted (a config lists them) and warned of once.
var alertTypesSent = []string{"budget_alerts"}

// alerting reads one of general_settings' alerting keys.
func (l *loader) alerting(key, path string, v *yaml.Node) error {
	a := &l.cfg.General.Alerting
	switch key {
	case "alerting":
		chans, err := l.strList(path, v)
		if err != nil {
			return err
		}
		for _, c := range chans {
			c = strings.ToLower(strings.TrimSpace(c))
			if !slices.Contains(alertChannels, c) {
				l.warn(path, v, "alerting channel %q is not supported (slack, webhook); ignored", c)
				continue
			}
			if !slices.Contains(a.Channels, c) {
				a.Channels = append(a.Channels, c)
			}
		}
	case "alert_types":
		types, err := l.strList(path, v)
		if err != nil {
			return err
		}
		a.AlertTypes = types
		var other []string
		for _, t := range types {
			if !slices.Contains(alertTypesSent, t) {
				other = append(other, t)
			}
		}
		if len(other) > 0 {
			l.warn(path, v, "only budget_alerts are sent; %s ignored", strings.Join(other, ", "))
		}
	case "alert_to_webhook_url":
		if v.Kind != yaml.MappingNode {
			l.warn(path, v, "must be a mapping (alert type: webhook URLs); ignored")
			return nil
		}
		return pairs(path, v, func(t string, vv *yaml.Node, p string) error {
			urls, err := l.strList(p, vv)
			if err != nil {
				return err
			}
			if a.AlertToWebhookURL == nil {
				a.AlertToWebhookURL = map[string][]string{}
			}
			a.AlertToWebhookURL[t] = urls
			return nil
		})
	case "alerting_args":
		if v.Kind != yaml.MappingNode {
			l.warn(path, v, "must be a mapping (budget_alert_ttl: seconds); ignored")
			return nil
		}
		return pairs(path, v, func(k string, vv *yaml.Node, p string) error {
			if k != "budget_alert_ttl" {
				l.warn(p, vv, "ignored: only budget_alert_ttl applies to the alerts sent (budget_alerts)")
				return nil
			}
			d, err := l.seconds(p, vv)
			if err == nil && d < time.Second {
				err = errAt(p, vv, "must be at least 1 second")
			}
			a.BudgetAlertTTL = d
			return err
		})
	case "alerting_threshold":
		l.warn(path, v, "ignored: hanging-request alerts are not sent (use CloudWatch alarms on the function's duration)")
	}
	return nil
}

// isAlertingKey reports whether key is one of general_settings' alerting
// keys.
func isAlertingKey(key string) bool {
	switch key {
	case "alerting", "alert_types", "alert_to_webhook_url", "alerting_args", "alerting_threshold":
		return true
	}
	return false
}

// AlertingOf reads general_settings' alerting keys of a config without
// loading the rest: the spend consumer needs only them (Load reports the
// same settings' warnings and errors).
func AlertingOf(data []byte, getenv Getenv) (Alerting, error) {
	cfg, err := generalOf(data, getenv, func(l *loader, k, p string, v *yaml.Node) error {
		if isAlertingKey(k) {
			return l.alerting(k, p, v)
		}
		return nil
	})
	return cfg.General.Alerting, err
}
