package callbacks

import (
	"encoding/json"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// Record is one call as every sink receives it: the spend event after the
// redaction settings (Redact). Its fields only ever grow.
type Record struct {
	CallID string // x-litellm-call-id: the record's id in every sink
	Start  time.Time
	End    time.Time
	// CompletionStart is when a stream's first content event was sent
	// (zero: not a stream, or none was).
	CompletionStart time.Time
	Status          spend.Status
	StatusCode      int
	Error           string // the failure's message; "" on success

	CallType     string // "chat", "embeddings", ...
	Stream       bool
	ModelGroup   string // the model as the client asked for it
	Model        string // the provider's model
	DeploymentID string
	Provider     string
	APIBase      string

	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
	UsageEstimated   bool
	CostNanos        int64 // the spend log's cost, nano-USD; meaningful when CostKnown
	CostKnown        bool

	Attempts, Retries, Fallbacks int

	// The caller; "" when redact_user_api_key_info is on (TeamID, UserID
	// and OrganizationID too), or when the request had none.
	KeyHash        string
	KeyAlias       string
	TeamID         string
	UserID         string
	OrganizationID string
	EndUser        string
	Tags           []string

	// Metadata, Messages and Response are JSON values (spend.Clip), nil
	// when content logging is off (turn_off_message_logging, or the
	// gateway did not capture them).
	Metadata, Messages, Response json.RawMessage
}

// Success reports whether the call succeeded.
func (r *Record) Success() bool { return r.Status == spend.StatusSuccess }

// Cost returns the cost in USD (0 when unknown).
func (r *Record) Cost() float64 {
	if !r.CostKnown {
		return 0
	}
	return float64(r.CostNanos) / keys.NanosPerUSD
}

// TotalTokens returns prompt + completion tokens.
func (r *Record) TotalTokens() int64 { return r.PromptTokens + r.CompletionTokens }

// Latency returns End - Start.
func (r *Record) Latency() time.Duration { return r.End.Sub(r.Start) }

// NewRecord returns e as a Record, before redaction.
func NewRecord(e *spend.Event) Record {
	r := Record{
		CallID: e.RequestID, Start: e.Start, End: e.End, Status: e.Status, StatusCode: e.StatusCode, Error: e.Error,
		CallType: e.CallType, Stream: e.Stream, ModelGroup: e.ModelGroup, Model: e.Model, DeploymentID: e.DeploymentID,
		Provider: e.Provider, APIBase: e.APIBase,
		PromptTokens: e.PromptTokens, CompletionTokens: e.CompletionTokens, CachedTokens: e.CachedTokens,
		UsageEstimated: e.UsageEstimated, CostNanos: e.Cost, CostKnown: e.CostKnown,
		Attempts: e.Attempts, Retries: e.Retries, Fallbacks: e.Fallbacks,
		KeyHash: e.KeyHash, KeyAlias: e.KeyAlias, TeamID: e.TeamID, UserID: e.UserID, OrganizationID: e.OrganizationID,
		EndUser: e.EndUser, Tags: e.Tags,
		Metadata: e.Metadata, Messages: e.Messages, Response: e.Response,
	}
	if e.TTFT > 0 {
		r.CompletionStart = e.Start.Add(e.TTFT)
	}
	return r
}

// Redaction is what is kept out of every sink.
type Redaction struct {
	NoContent bool // turn_off_message_logging: metadata, messages, response
	NoKeyInfo bool // redact_user_api_key_info: key hash and alias, user, team, organization
}

// Redact applies x to r.
func (x Redaction) Redact(r *Record) {
	if x.NoContent {
		r.Metadata, r.Messages, r.Response = nil, nil, nil
	}
	if x.NoKeyInfo {
		r.KeyHash, r.KeyAlias, r.UserID, r.TeamID, r.OrganizationID = "", "", "", "", ""
	}
}
