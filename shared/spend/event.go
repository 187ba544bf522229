// Package spend is the spend pipeline: one versioned event per gateway
// request (Event), the store that records events exactly once into spend
// logs and totals (Store: Memory here, DynamoDB in ddbspend), the consumer
// logic shared by every way events arrive (Consumer: an SQS batch, the
// in-process queue, a replay), and the publishers the gateway hands events
// to (Publisher: the in-process Queue here, SQS in spendsqs).
//
// Money is integer nano-USD (keys.NanosPerUSD) from the event to every
// total; no float is ever added up.
package spend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
)

// Version is the version of the event format this package writes for
// events that name no organization.
const Version = 1

// VersionOrg is the version of an event that names an organization
// (organization_id): version 1 plus that field. An event naming one is
// written as version 2 so that a consumer that predates organizations
// refuses it (to the dead-letter queue, redriven after its upgrade)
// rather than record it without the organization's share. This package
// accepts both; a version 1 event never names an organization.
const VersionOrg = 2

// Status is how a request ended.
type Status string

// Statuses.
const (
	StatusSuccess      Status = "success"
	StatusFailure      Status = "failure"
	StatusDisconnected Status = "client_disconnected" // the client went away before the end
)

// Event is what one gateway request spent, and what the logging callbacks
// (shared/callbacks) receive of it. It carries prompt and response text
// only when the gateway is told to (a callback is configured and
// litellm_settings.turn_off_message_logging is off), each bounded by
// MaxContentLen (Clip).
//
// Its JSON form (version 1) is the queue message body and the replay line:
//
//	{"v":1,"request_id":"...","start":"<RFC 3339>","end":"...","status":"success",
//	 "key_hash":"<sha256 hex>","key_alias":"...","team_id":"...","user_id":"...",
//	 "organization_id":"..." (version 2 only),
//	 "end_user":"...","model_group":"<as asked>","deployment_id":"...","provider":"openai",
//	 "model":"<provider model>","api_base":"...","call_type":"chat",
//	 "prompt_tokens":12,"completion_tokens":3,"cached_tokens":0,"cost":1234,
//	 "usage_estimated":false,"attempts":1,"retries":0,"fallbacks":0,"tags":["a"],
//	 "stream":false,"status_code":200,
//	 "ttft_ms":120,"error":"...","metadata":{...},"messages":[...],"response":{...}}
//
// ttft_ms, error, metadata, messages and response are optional (an older
// consumer ignores them: no version change); messages, response and
// metadata are JSON values of at most MaxContentLen bytes each (Clip).
//
// cost is integer nano-USD, null when unknown. Empty strings, false and
// zero counts are omitted.
type Event struct {
	Version   int
	RequestID string // x-litellm-call-id
	Start     time.Time
	End       time.Time
	Status    Status

	KeyHash  string // "" for the master key or an open gateway
	KeyAlias string
	TeamID   string
	UserID   string
	EndUser  string // the request's "user"
	// OrganizationID is the organization of the key's team ("": none);
	// only a VersionOrg event names one.
	OrganizationID string

	ModelGroup   string // the model as the client asked for it
	DeploymentID string // the final attempt's deployment
	Provider     string
	Model        string // the provider's model name
	APIBase      string
	CallType     string // "chat", "embeddings"

	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
	Cost             int64 // nano-USD; meaningful when CostKnown
	CostKnown        bool
	UsageEstimated   bool

	Attempts   int
	Retries    int
	Fallbacks  int
	Tags       []string
	Stream     bool
	StatusCode int

	// TTFT is a stream's time to its first content event (0: none or not
	// a stream).
	TTFT time.Duration
	// Error is the failure's message (at most MaxTextLen bytes; "" on
	// success).
	Error string
	// Metadata is the request's metadata object as the client sent it;
	// Messages its messages (or input, prompt), Response the answer's
	// body. Each is set only when content logging is on, and is a JSON
	// value of at most MaxContentLen bytes (Clip); nil otherwise.
	Metadata, Messages, Response json.RawMessage

	// Hold is the strict-budget reservation the request made, or tried to
	// make when its admission got no answer, which recording the event
	// settles (nil: none; holds.go). A hold that is not there (never
	// written, or released by the sweeper) settles at the real cost alone.
	Hold *limits.Hold
}

// ErrInvalid is wrapped by every validation error: such an event is never
// recorded and its message goes to the dead-letter queue.
var ErrInvalid = apierr.Classed(apierr.ErrInvalid, "invalid spend event")

// Limits on event fields: they become DynamoDB keys and item attributes.
const (
	MaxIDLen   = 256 // request, team, user and end user ids, aliases, model group, deployment id
	MaxTextLen = 1024
	MaxTags    = 64
	// MaxContentLen bounds each of an event's messages, response and
	// metadata: ten events with all three fit one SQS batch (256 KB).
	MaxContentLen = 8 << 10
)

// Clip returns b as an event's content value: b itself when it is at
// most MaxContentLen bytes of valid JSON, else a JSON string holding its
// first bytes (cut on a rune boundary) followed by "...[truncated N
// bytes]"; nil for empty input.
func Clip(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if len(b) <= MaxContentLen && json.Valid(b) {
		return json.RawMessage(b)
	}
	keep := MaxContentLen / 2 // a JSON string may escape each byte to up to 6
	for keep > 0 && keep < len(b) && !utf8.RuneStart(b[keep]) {
		keep--
	}
	keep = min(keep, len(b))
	s := strings.ToValidUTF8(string(b[:keep]), "\uFFFD")
	if keep < len(b) {
		s += fmt.Sprintf("...[truncated %d bytes]", len(b)-keep)
	}
	out, _ := json.Marshal(s)
	for len(out) > MaxContentLen { // only with heavy escaping
		s = s[:len(s)/2]
		out, _ = json.Marshal(strings.ToValidUTF8(s, "") + "...[truncated]")
	}
	return out
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// Validate checks e; its error wraps ErrInvalid and says why.
func (e *Event) Validate() error {
	switch {
	case e.Version != Version && e.Version != VersionOrg:
		return invalid("unknown version %d (want %d or %d)", e.Version, Version, VersionOrg)
	case e.Version == Version && e.OrganizationID != "":
		return invalid("request %s: a version %d event names no organization_id (version %d does)", short(e.RequestID), Version, VersionOrg)
	case e.RequestID == "":
		return invalid("missing request_id")
	case e.Start.IsZero():
		return invalid("request %s: missing start", short(e.RequestID))
	case e.End.IsZero():
		return invalid("request %s: missing end", short(e.RequestID))
	case e.End.Before(e.Start):
		return invalid("request %s: end before start", short(e.RequestID))
	case e.Status != StatusSuccess && e.Status != StatusFailure && e.Status != StatusDisconnected:
		return invalid("request %s: unknown status %q", short(e.RequestID), short(string(e.Status)))
	case e.KeyHash != "" && !keys.ValidHash(e.KeyHash):
		return invalid("request %s: key_hash is not a sha256 hex digest", short(e.RequestID))
	case e.CostKnown && e.Cost < 0:
		return invalid("request %s: negative cost %d", short(e.RequestID), e.Cost)
	case e.PromptTokens < 0 || e.CompletionTokens < 0 || e.CachedTokens < 0:
		return invalid("request %s: negative token count", short(e.RequestID))
	case e.Attempts < 0 || e.Retries < 0 || e.Fallbacks < 0:
		return invalid("request %s: negative attempt count", short(e.RequestID))
	case len(e.Tags) > MaxTags:
		return invalid("request %s: %d tags (at most %d)", short(e.RequestID), len(e.Tags), MaxTags)
	}
	for i, v := range [...]string{e.RequestID, e.KeyAlias, e.TeamID, e.UserID, e.EndUser, e.ModelGroup, e.DeploymentID, e.Provider, e.Model, e.CallType, e.OrganizationID} {
		if len(v) > MaxIDLen {
			name := [...]string{"request_id", "key_alias", "team_id", "user_id", "end_user", "model_group", "deployment_id", "provider", "model", "call_type", "organization_id"}[i]
			return invalid("request %s: %s longer than %d bytes", short(e.RequestID), name, MaxIDLen)
		}
	}
	if len(e.APIBase) > MaxTextLen {
		return invalid("request %s: api_base longer than %d bytes", short(e.RequestID), MaxTextLen)
	}
	if len(e.Error) > MaxTextLen {
		return invalid("request %s: error longer than %d bytes", short(e.RequestID), MaxTextLen)
	}
	if e.TTFT < 0 {
		return invalid("request %s: negative ttft_ms", short(e.RequestID))
	}
	for i, c := range [...]json.RawMessage{e.Metadata, e.Messages, e.Response} {
		if len(c) > MaxContentLen {
			return invalid("request %s: %s longer than %d bytes", short(e.RequestID), [...]string{"metadata", "messages", "response"}[i], MaxContentLen)
		}
	}
	for _, t := range e.Tags {
		if len(t) > MaxIDLen {
			return invalid("request %s: a tag longer than %d bytes", short(e.RequestID), MaxIDLen)
		}
	}
	if e.Hold != nil {
		return e.validateHold()
	}
	return nil
}

// Nanos returns the event's cost in nano-USD, 0 when unknown.
func (e *Event) Nanos() int64 {
	if e.CostKnown {
		return e.Cost
	}
	return 0
}

// Day returns the UTC day the event counts for (its end), as 2006-01-02.
func (e *Event) Day() string { return e.End.UTC().Format(time.DateOnly) }

// Refs returns the records of the keys store whose spend the event adds to:
// its key, team, user, team member, end user and organization, those it
// names. (LiteLLM adds spend to the organization, not to the user's
// organization membership.)
func (e *Event) Refs() []keys.Ref {
	if e.KeyHash == "" && e.TeamID == "" && e.UserID == "" && e.EndUser == "" && e.OrganizationID == "" {
		return nil
	}
	refs := make([]keys.Ref, 0, 6)
	if e.KeyHash != "" {
		refs = append(refs, keys.Ref{Kind: keys.KindKey, ID: e.KeyHash})
	}
	if e.TeamID != "" {
		refs = append(refs, keys.Ref{Kind: keys.KindTeam, ID: e.TeamID})
	}
	if e.UserID != "" {
		refs = append(refs, keys.Ref{Kind: keys.KindUser, ID: e.UserID})
	}
	if e.TeamID != "" && e.UserID != "" {
		refs = append(refs, keys.Ref{Kind: keys.KindMember, ID: keys.MemberID(e.TeamID, e.UserID)})
	}
	if e.EndUser != "" {
		refs = append(refs, keys.Ref{Kind: keys.KindEndUser, ID: e.EndUser})
	}
	if e.OrganizationID != "" {
		refs = append(refs, keys.Ref{Kind: keys.KindOrg, ID: e.OrganizationID})
	}
	return refs
}

// Deltas returns the spend the event adds to each record it names (none
// when its cost is zero or unknown).
func (e *Event) Deltas() []keys.SpendDelta {
	n := e.Nanos()
	if n == 0 {
		return nil
	}
	refs := e.Refs()
	if len(refs) == 0 {
		return nil
	}
	ds := make([]keys.SpendDelta, len(refs))
	for i, r := range refs {
		ds[i] = keys.SpendDelta{Ref: r, Nanos: n, At: e.End, Model: e.ModelGroup}
	}
	return ds
}

// Success reports whether the request succeeded.
func (e *Event) Success() bool { return e.Status == StatusSuccess }

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// wireEvent is the JSON form.
type wireEvent struct {
	Version          int             `json:"v"`
	RequestID        string          `json:"request_id"`
	Start            time.Time       `json:"start"`
	End              time.Time       `json:"end"`
	Status           Status          `json:"status"`
	KeyHash          string          `json:"key_hash,omitempty"`
	KeyAlias         string          `json:"key_alias,omitempty"`
	TeamID           string          `json:"team_id,omitempty"`
	UserID           string          `json:"user_id,omitempty"`
	EndUser          string          `json:"end_user,omitempty"`
	OrganizationID   string          `json:"organization_id,omitempty"`
	ModelGroup       string          `json:"model_group,omitempty"`
	DeploymentID     string          `json:"deployment_id,omitempty"`
	Provider         string          `json:"provider,omitempty"`
	Model            string          `json:"model,omitempty"`
	APIBase          string          `json:"api_base,omitempty"`
	CallType         string          `json:"call_type,omitempty"`
	PromptTokens     int64           `json:"prompt_tokens"`
	CompletionTokens int64           `json:"completion_tokens"`
	CachedTokens     int64           `json:"cached_tokens,omitempty"`
	Cost             json.RawMessage `json:"cost"`
	UsageEstimated   bool            `json:"usage_estimated,omitempty"`
	Attempts         int             `json:"attempts,omitempty"`
	Retries          int             `json:"retries,omitempty"`
	Fallbacks        int             `json:"fallbacks,omitempty"`
	Tags             []string        `json:"tags,omitempty"`
	Stream           bool            `json:"stream,omitempty"`
	StatusCode       int             `json:"status_code,omitempty"`
	Hold             *wireHold       `json:"hold,omitempty"`
	TTFTMillis       int64           `json:"ttft_ms,omitempty"`
	Error            string          `json:"error,omitempty"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Messages         json.RawMessage `json:"messages,omitempty"`
	Response         json.RawMessage `json:"response,omitempty"`
}

var jsonNull = json.RawMessage("null")

// MarshalJSON writes the version 1 JSON form.
func (e Event) MarshalJSON() ([]byte, error) {
	w := wireEvent{
		Version: e.Version, RequestID: e.RequestID, Start: e.Start.UTC(), End: e.End.UTC(), Status: e.Status,
		KeyHash: e.KeyHash, KeyAlias: e.KeyAlias, TeamID: e.TeamID, UserID: e.UserID, EndUser: e.EndUser,
		OrganizationID: e.OrganizationID,
		ModelGroup:     e.ModelGroup, DeploymentID: e.DeploymentID, Provider: e.Provider, Model: e.Model,
		APIBase: e.APIBase, CallType: e.CallType,
		PromptTokens: e.PromptTokens, CompletionTokens: e.CompletionTokens, CachedTokens: e.CachedTokens,
		Cost: jsonNull, UsageEstimated: e.UsageEstimated,
		Attempts: e.Attempts, Retries: e.Retries, Fallbacks: e.Fallbacks, Tags: e.Tags, Stream: e.Stream,
		StatusCode: e.StatusCode, Hold: holdWire(e.Hold),
		TTFTMillis: e.TTFT.Milliseconds(), Error: e.Error,
		Metadata: e.Metadata, Messages: e.Messages, Response: e.Response,
	}
	if e.CostKnown {
		w.Cost = strconv.AppendInt(nil, e.Cost, 10)
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the JSON form. It checks types, not values (a
// hold's counter names aside, which must read back): Decode also validates.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Event{
		Version: w.Version, RequestID: w.RequestID, Start: w.Start, End: w.End, Status: w.Status,
		KeyHash: w.KeyHash, KeyAlias: w.KeyAlias, TeamID: w.TeamID, UserID: w.UserID, EndUser: w.EndUser,
		OrganizationID: w.OrganizationID,
		ModelGroup:     w.ModelGroup, DeploymentID: w.DeploymentID, Provider: w.Provider, Model: w.Model,
		APIBase: w.APIBase, CallType: w.CallType,
		PromptTokens: w.PromptTokens, CompletionTokens: w.CompletionTokens, CachedTokens: w.CachedTokens,
		UsageEstimated: w.UsageEstimated,
		Attempts:       w.Attempts, Retries: w.Retries, Fallbacks: w.Fallbacks, Tags: w.Tags, Stream: w.Stream,
		StatusCode: w.StatusCode,
		TTFT:       ttft(w.TTFTMillis), Error: w.Error,
		Metadata: w.Metadata, Messages: w.Messages, Response: w.Response,
	}
	hold, err := w.Hold.hold(w.RequestID)
	if err != nil {
		return err
	}
	e.Hold = hold
	c := bytes.TrimSpace(w.Cost)
	if len(c) == 0 || bytes.Equal(c, jsonNull) {
		return nil
	}
	n, err := parseCost(c)
	if err != nil {
		return err
	}
	e.Cost, e.CostKnown = n, true
	return nil
}

// ttft reads ttft_ms; a value a Duration cannot hold reads as negative,
// which Validate rejects.
func ttft(ms int64) time.Duration {
	if ms < 0 || ms > int64(1<<63-1)/int64(time.Millisecond) {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// parseCost reads cost: a JSON integer of nano-USD. A fraction, an
// exponent, a string ("NaN", "Infinity") or a number beyond int64 is
// rejected, with the reason.
func parseCost(c []byte) (int64, error) {
	if c[0] == '"' {
		return 0, invalid("cost %s is a string, not a number of nano-USD (non-finite costs are rejected)", short(string(c)))
	}
	n, err := strconv.ParseInt(string(c), 10, 64)
	if err != nil {
		if _, ferr := strconv.ParseFloat(string(c), 64); ferr == nil || errors.Is(ferr, strconv.ErrRange) {
			return 0, invalid("cost %s is not an integer number of nano-USD", short(string(c)))
		}
		return 0, invalid("cost %s is not a number", short(string(c)))
	}
	return n, nil
}

// Decode parses and validates one message body. Its error wraps
// ErrInvalid and says why.
func Decode(body []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(body, &e); err != nil {
		if errors.Is(err, ErrInvalid) {
			return Event{}, err
		}
		return Event{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := e.Validate(); err != nil {
		return Event{}, err
	}
	return e, nil
}

// Encode returns the JSON form of e.
func Encode(e *Event) []byte {
	b, _ := e.MarshalJSON() // nothing in an Event can fail to marshal
	return b
}
