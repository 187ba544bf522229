// Package alerts sends LiteLLM's budget alerts (general_settings.alerting:
// slack, webhook; alert_types: budget_alerts) from the spend consumer,
// where spend is rolled up: after a batch is recorded, the records its
// events name (key, team, user, organization) are read once and each
// threshold they have reached in their budget period is claimed, sent and
// marked sent, once per record, threshold, period and destination, however
// many consumers run (Claims: a conditional write per claim).
//
// The thresholds are LiteLLM's: soft_budget reached ("Soft Budget
// Crossed"), and of max_budget, the highest of 15% left ("15% Threshold
// Crossed"), 5% left ("5% Threshold Crossed") and reached ("Budget
// Crossed"). A record with a budget_duration alerts once per period; one
// without, once per budget_alert_ttl window (LiteLLM's 24 hours).
//
// # Once
//
// A claim item per alert and destination goes through two states: pending
// (held by a token until a lease ends) and sent. Claim takes an absent
// item, or a pending one whose lease has ended; the holder sends, then
// marks it sent (conditioned on its token), or, when the send failed after
// its retries, releases it, and the batch fails so that the queue delivers
// it again: the redelivered batch finds its events recorded, reads the
// same records, and claims the alert anew. A sent claim is never sent
// again. A consumer that dies between the send and the mark leaves a
// pending claim whose lease ends: the alert is then sent again (at least
// once, not exactly once, in that window alone).
package alerts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// Threshold is a budget threshold an alert is sent for.
type Threshold string

// Thresholds, in the order of max_budget's.
const (
	Soft Threshold = "soft"  // spend >= soft_budget
	T85  Threshold = "85pct" // 15% of max_budget left or less
	T95  Threshold = "95pct" // 5% left or less
	Max  Threshold = "max"   // spend >= max_budget
)

// DefaultTTL is LiteLLM's budget_alert_ttl: with no budget_duration, an
// alert is sent at most once per this window.
const DefaultTTL = 24 * time.Hour

// Alert is one threshold a record has reached in one period.
type Alert struct {
	Ref       keys.Ref
	Threshold Threshold
	// Period is the start of the budget period (or of the budget_alert_ttl
	// window, with no budget_duration) the alert belongs to; End is when
	// it ends (the claim expires after it).
	Period, End time.Time
	At          time.Time // the end of the latest call that counted
	Spend       int64     // nano-USD spent in the period
	MaxBudget   *float64  // USD
	SoftBudget  *float64  // USD
	Info        Info      // what the calls said of the record
}

// Info is what the events said about the scope of an alert (LiteLLM's
// CallInfo fields, as the webhook's event names them).
type Info struct {
	Token          string `json:"token,omitempty"` // key hash
	KeyAlias       string `json:"key_alias,omitempty"`
	UserID         string `json:"user_id,omitempty"`
	TeamID         string `json:"team_id,omitempty"`
	OrganizationID string `json:"organization_id,omitempty"`
}

// ID is the claim id of the alert at destination dest: one per record,
// threshold, period and destination.
func (a *Alert) ID(dest string) string {
	return "alert#" + a.Ref.String() + "#" + string(a.Threshold) + "#" + strconv.FormatInt(a.Period.UnixMilli(), 10) + "#" + dest
}

// Evaluate returns the alerts rs has reached in the period containing at:
// soft_budget, and the highest of max_budget's thresholds (LiteLLM sends
// the highest it sees). ttl bounds the period of a budget with no
// budget_duration.
func Evaluate(ref keys.Ref, rs keys.RecordSpend, at time.Time, ttl time.Duration) []Alert {
	b := rs.Budget
	if b.SoftBudget == nil && b.MaxBudget == nil {
		return nil
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	var spent int64
	var period, end time.Time
	if b.Duration == "" {
		spent = rs.State.Total
		period = at.Truncate(ttl).UTC()
		end = period.Add(ttl)
	} else {
		if period, end = b.PeriodAt(at), b.ResetAt(at); period.IsZero() {
			return nil
		}
		if !period.Equal(rs.State.PeriodStart) {
			return nil // nothing spent in this period (yet, as read)
		}
		spent = rs.State.Period
	}
	base := Alert{Ref: ref, Period: period, End: end, At: at, Spend: spent, MaxBudget: b.MaxBudget, SoftBudget: b.SoftBudget}
	var out []Alert
	if b.SoftBudget != nil && spent >= keys.Nanos(*b.SoftBudget) && spent > 0 {
		a := base
		a.Threshold = Soft
		out = append(out, a)
	}
	if b.MaxBudget != nil {
		if t := maxThreshold(spent, keys.Nanos(*b.MaxBudget)); t != "" {
			a := base
			a.Threshold = t
			out = append(out, a)
		}
	}
	return out
}

// maxThreshold is the highest threshold of max_budget that spent reaches:
// LiteLLM's percent_left = (max - spend) / max, 0 when max is 0.
func maxThreshold(spent, max int64) Threshold {
	if spent >= max {
		return Max
	}
	left := float64(max-spent) / float64(max)
	switch {
	case left <= 0.05:
		return T95
	case left <= 0.15:
		return T85
	}
	return ""
}

// destName names a destination by its kind and a digest of its URL, so
// that a changed URL is a new destination and the URL is not stored.
func destName(kind, url string) string {
	h := sha256.Sum256([]byte(url))
	return kind + ":" + hex.EncodeToString(h[:6])
}

// kindNames are LiteLLM's event_group and message label of each record
// kind alerts are sent for.
var kindNames = map[keys.Kind]struct{ group, label string }{
	keys.KindKey:  {"key", "Key Budget"},
	keys.KindTeam: {"team", "Team Budget"},
	keys.KindUser: {"internal_user", "User Budget"},
	keys.KindOrg:  {"organization", "Organization Budget"},
}

// group is LiteLLM's event_group of a record kind.
func group(k keys.Kind) string {
	if n, ok := kindNames[k]; ok {
		return n.group
	}
	return string(k)
}

// label is LiteLLM's message prefix of a record kind ("Key Budget").
func label(k keys.Kind) string {
	if n, ok := kindNames[k]; ok {
		return n.label
	}
	return string(k) + " Budget"
}

// Event is LiteLLM's webhook event name of the alert.
func (a *Alert) Event() string {
	switch a.Threshold {
	case Soft:
		return "soft_budget_crossed"
	case Max:
		return "budget_crossed"
	}
	return "threshold_crossed"
}

// Message is LiteLLM's event_message of the alert.
func (a *Alert) Message() string {
	switch a.Threshold {
	case Soft:
		return fmt.Sprintf("Soft Budget Crossed: %s: Total Soft Budget:`%s`", label(a.Ref.Kind), usd(a.SoftBudget))
	case Max:
		return fmt.Sprintf("%s: Budget Crossed\n Total Budget:`%s`", label(a.Ref.Kind), usd(a.MaxBudget))
	case T95:
		return label(a.Ref.Kind) + ": 5% Threshold Crossed "
	}
	return label(a.Ref.Kind) + ": 15% Threshold Crossed"
}

func usd(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}
