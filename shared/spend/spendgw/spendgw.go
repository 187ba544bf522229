// Package spendgw turns the gateway's per-request Completion into a spend
// event and hands it to a publisher. It is the only spend code that links
// the gateway, so that the consumer binary (functions/spend) does not.
package spendgw

import (
	"context"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/spend"
)

// OnComplete returns the gateway.Options.OnComplete hook that publishes
// each request's event to p. It builds the event by value and copies it
// into p: no encoding and no network on the request's goroutine.
func OnComplete(p spend.Publisher) func(context.Context, *gateway.Completion) {
	return func(_ context.Context, c *gateway.Completion) {
		p.Publish(Event(c))
	}
}

// Event returns the spend event of a completed request. Strings past the
// event's limits are cut, so that an event built here always validates.
func Event(c *gateway.Completion) spend.Event {
	e := spend.Event{
		Version:          spend.Version,
		RequestID:        c.CallID,
		Start:            c.Started,
		End:              c.Ended,
		Status:           spend.StatusSuccess,
		EndUser:          cut(c.EndUser),
		ModelGroup:       cut(c.Model),
		CallType:         c.Operation.String(),
		PromptTokens:     max(c.Usage.PromptTokens, 0),
		CompletionTokens: max(c.Usage.CompletionTokens, 0),
		CachedTokens:     max(c.Usage.CachedTokens, 0),
		Cost:             max(c.CostNanos, 0),
		CostKnown:        c.CostKnown,
		UsageEstimated:   c.UsageEstimated,
		Attempts:         c.Attempts,
		Retries:          c.Retries,
		Fallbacks:        c.Fallbacks,
		Tags:             c.Tags,
		Stream:           c.Stream,
		StatusCode:       c.StatusCode,
		Hold:             hold(c.Hold),
	}
	switch {
	case c.ClientGone:
		e.Status = spend.StatusDisconnected
	case c.Err != nil:
		e.Status = spend.StatusFailure
	}
	if e.End.IsZero() {
		e.End = time.Now()
	}
	if e.Start.IsZero() || e.End.Before(e.Start) {
		e.Start = e.End
	}
	if p := c.Principal; p != nil {
		e.KeyHash = p.KeyHash
		if k := p.Key; k != nil {
			e.KeyAlias, e.TeamID, e.UserID = cut(k.Alias), cut(k.TeamID), cut(k.UserID)
		}
		if t := p.Team; t != nil && e.TeamID == "" {
			e.TeamID = cut(t.ID)
		}
	}
	if a := c.Attempt; a != nil && a.Deployment != nil {
		d := a.Deployment
		e.DeploymentID, e.Provider, e.APIBase = cut(d.ID), cut(d.Provider), config.DisplayURL(d.APIBase)
		e.Model = cut(a.ProviderModel)
		if e.Model == "" {
			e.Model = cut(d.Model)
		}
		if len(e.APIBase) > spend.MaxTextLen {
			e.APIBase = e.APIBase[:spend.MaxTextLen]
		}
	}
	if len(e.Tags) > spend.MaxTags || anyLong(e.Tags) {
		tags := make([]string, 0, min(len(e.Tags), spend.MaxTags))
		for _, t := range e.Tags[:min(len(e.Tags), spend.MaxTags)] {
			tags = append(tags, cut(t))
		}
		e.Tags = tags
	}
	return e
}

func cut(s string) string {
	if len(s) > spend.MaxIDLen {
		return s[:spend.MaxIDLen]
	}
	return s
}

func anyLong(ss []string) bool {
	for _, s := range ss {
		if len(s) > spend.MaxIDLen {
			return true
		}
	}
	return false
}

// hold is the spend event's form of a request's strict-budget hold.
func hold(h *limits.Hold) *spend.Hold {
	if h == nil {
		return nil
	}
	return &spend.Hold{Amount: h.Amount, Expires: h.Expires, Counters: h.Counters()}
}
