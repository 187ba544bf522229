package gateway

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/spend"
)

// The spend event is built here, from the Completion the gateway fills in
// as it serves a request: the spend consumer's binary (functions/spend)
// links package spend and not the gateway.

// PublishSpend returns the Options.OnComplete hook that publishes each
// request's spend event to p. It builds the event by value and copies it
// into p: no encoding and no network on the request's goroutine.
func PublishSpend(p spend.Publisher) func(context.Context, *Completion) {
	return func(_ context.Context, c *Completion) {
		p.Publish(c.SpendEvent())
	}
}

// SpendEvent returns the spend event of a completed request. Strings past
// the event's limits are cut, so that an event built here always
// validates.
func (c *Completion) SpendEvent() spend.Event {
	e := spend.Event{
		Version:          spend.Version,
		RequestID:        c.CallID,
		Start:            c.Started,
		End:              c.Ended,
		Status:           spend.StatusSuccess,
		EndUser:          cutID(c.EndUser),
		ModelGroup:       cutID(c.Model),
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
		Hold:             c.Hold,
		TTFT:             max(c.TTFT, 0),
		Metadata:         c.Metadata,
		Messages:         c.Messages,
		Response:         c.Response,
	}
	switch {
	case c.ClientGone:
		e.Status = spend.StatusDisconnected
	case c.Err != nil:
		e.Status = spend.StatusFailure
	}
	if ae, ok := c.Err.(*apierr.Error); ok { // the message the client saw (no allocation)
		e.Error = clipUTF8(ae.Message, spend.MaxTextLen)
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
			e.KeyAlias, e.TeamID, e.UserID = cutID(k.Alias), cutID(k.TeamID), cutID(k.UserID)
		}
		if t := p.Team; t != nil && e.TeamID == "" {
			e.TeamID = cutID(t.ID)
		}
		if o := p.Org; o != nil {
			e.Version, e.OrganizationID = spend.VersionOrg, cutID(o.ID)
		}
	}
	if a := c.Attempt; a != nil && a.Deployment != nil {
		d := a.Deployment
		e.DeploymentID, e.Provider, e.APIBase = cutID(d.ID), cutID(d.Provider), config.DisplayURL(d.APIBase)
		e.Model = cutID(a.ProviderModel)
		if e.Model == "" {
			e.Model = cutID(d.Model)
		}
		e.APIBase = clipUTF8(e.APIBase, spend.MaxTextLen)
	}
	if len(e.Tags) > spend.MaxTags || anyToCut(e.Tags) {
		tags := make([]string, 0, min(len(e.Tags), spend.MaxTags))
		for _, t := range e.Tags[:min(len(e.Tags), spend.MaxTags)] {
			tags = append(tags, cutID(t))
		}
		e.Tags = tags
	}
	return e
}

// cutID returns s as an id of the event: valid UTF-8 of at most
// spend.MaxIDLen bytes.
func cutID(s string) string { return clipUTF8(s, spend.MaxIDLen) }

// clipUTF8 returns s as valid UTF-8 of at most n bytes, cut on a rune
// boundary. The event travels as JSON, and encoding/json writes each invalid byte as
// U+FFFD (3 bytes): a string cut inside a rune, or holding invalid bytes,
// would grow past its limit on the way and the consumer would reject the
// event to the dead-letter queue, its spend never counted. A valid string
// comes back as a prefix of itself without allocating; only invalid input
// (garbage from the client) is rebuilt, replacing each invalid byte as JSON
// would.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		if utf8.ValidString(s) {
			return s
		}
		return sanitizeUTF8(s, n)
	}
	i := n // the last rune start at or before n; a rune is at most UTFMax bytes
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	if utf8.RuneStart(s[i]) && utf8.ValidString(s[:i]) {
		return s[:i]
	}
	return sanitizeUTF8(s, n)
}

// sanitizeUTF8 returns the longest valid UTF-8 of at most n bytes that s
// reads as, with U+FFFD for each invalid byte. It reads at most n+1 runes of s.
func sanitizeUTF8(s string, n int) string {
	var b strings.Builder
	b.Grow(min(3*len(s), n))
	for _, r := range s { // an invalid byte reads as utf8.RuneError, one byte wide
		if b.Len()+utf8.RuneLen(r) > n {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// anyToCut reports whether a tag needs cutID.
func anyToCut(ss []string) bool {
	for _, s := range ss {
		if len(s) > spend.MaxIDLen || !utf8.ValidString(s) {
			return true
		}
	}
	return false
}
