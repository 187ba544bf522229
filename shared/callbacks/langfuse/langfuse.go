// Package langfuse is the langfuse callback: each call becomes a trace and
// a generation in Langfuse, sent through its public ingestion API (POST
// {LANGFUSE_HOST}/api/public/ingestion, basic auth LANGFUSE_PUBLIC_KEY :
// LANGFUSE_SECRET_KEY), one request per consumer batch (split past
// maxBatch calls). The fields are those LiteLLM's langfuse logger sends
// (litellm/integrations/langfuse/langfuse.py, _log_langfuse_v2): trace
// "litellm-<call_type>" with the end user as userId, the request tags and
// the input/output; generation "litellm:<key alias>" (or
// "litellm-<call_type>") with model, start, end, completion start, usage
// (input, output, total, cached), cost, metadata (user_api_key_*,
// litellm_response_cost, api_base, hidden_params) and level DEFAULT, or
// ERROR with the error as status message. The call id is the trace's and
// the generation's id, and the events' ids derive from it: a redelivered
// batch updates what Langfuse has instead of adding to it.
package langfuse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/callbacks"
)

// DefaultHost is Langfuse's cloud, LiteLLM's default too.
const DefaultHost = "https://cloud.langfuse.com"

// maxBatch bounds the calls of one ingestion request (Langfuse takes up
// to 3.5 MB a request; a call's event is at most ~30 KB with content).
const maxBatch = 50

// Sink sends to one Langfuse project.
type Sink struct {
	endpoint       string
	public, secret string
	client         *http.Client
}

// New is the callbacks.Factory: the keys and host from the callback's
// params (langfuse_public_key, langfuse_secret_key, langfuse_host: a team's
// or key's callback_vars) or from LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY
// and LANGFUSE_HOST.
func New(_ context.Context, env callbacks.Env) (callbacks.Sink, error) {
	pub := env.Var("langfuse_public_key", "LANGFUSE_PUBLIC_KEY")
	sec := env.Var("langfuse_secret_key", "LANGFUSE_SECRET_KEY")
	if pub == "" || sec == "" {
		return nil, errors.New("LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY must be set")
	}
	host := env.Var("langfuse_host", "LANGFUSE_HOST")
	if host == "" {
		host = DefaultHost
	}
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	if callbacks.HTTPURL(host) == nil {
		return nil, fmt.Errorf("LANGFUSE_HOST %q is not an http(s) URL", host)
	}
	return &Sink{endpoint: strings.TrimRight(host, "/") + "/api/public/ingestion", public: pub, secret: sec, client: env.Client()}, nil
}

// Send implements callbacks.Sink.
func (s *Sink) Send(ctx context.Context, recs []callbacks.Record) error {
	for len(recs) > 0 {
		n := min(len(recs), maxBatch)
		if err := s.send(ctx, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

func (s *Sink) send(ctx context.Context, recs []callbacks.Record) error {
	b := Batch{Batch: make([]Event, 0, 2*len(recs)), Metadata: map[string]string{"sdk_name": "sluice", "sdk_integration": "litellm"}}
	for i := range recs {
		b.Batch = append(b.Batch, Events(&recs[i])...)
	}
	body, err := json.Marshal(b)
	if err != nil {
		return callbacks.Permanent(err)
	}
	rb, err := callbacks.PostJSON(ctx, s.client, "langfuse", s.endpoint, body, func(r *http.Request) { r.SetBasicAuth(s.public, s.secret) })
	if err != nil {
		return err
	}
	return multiStatus(rb)
}

// multiStatus reads a 207's per-event errors: a 5xx or 429 among them is
// retried (the whole batch again: it is idempotent), other errors are the
// events' own (Permanent).
func multiStatus(body []byte) error {
	var r struct {
		Errors []struct {
			ID      string `json:"id"`
			Status  int    `json:"status"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &r) != nil || len(r.Errors) == 0 {
		return nil
	}
	e := r.Errors[0]
	err := fmt.Errorf("langfuse: %d of the batch's events refused, the first %s: %d %s", len(r.Errors), e.ID, e.Status, e.Message)
	for _, e := range r.Errors {
		if e.Status >= 500 || e.Status == http.StatusTooManyRequests {
			return err
		}
	}
	return callbacks.Permanent(err)
}

// Batch is the ingestion request.
type Batch struct {
	Batch    []Event           `json:"batch"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Event is one ingestion event.
type Event struct {
	ID        string `json:"id"`
	Type      string `json:"type"` // trace-create, generation-create
	Timestamp string `json:"timestamp"`
	Body      any    `json:"body"`
}

// Trace is a trace-create body.
type Trace struct {
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Name      string          `json:"name"`
	UserID    string          `json:"userId,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	Tags      []string        `json:"tags"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

// Generation is a generation-create body.
type Generation struct {
	ID                  string             `json:"id"`
	TraceID             string             `json:"traceId"`
	Name                string             `json:"name"`
	StartTime           string             `json:"startTime"`
	EndTime             string             `json:"endTime"`
	CompletionStartTime string             `json:"completionStartTime,omitempty"`
	Model               string             `json:"model"`
	ModelParameters     map[string]any     `json:"modelParameters"`
	Input               json.RawMessage    `json:"input,omitempty"`
	Output              json.RawMessage    `json:"output,omitempty"`
	Usage               Usage              `json:"usage"`
	UsageDetails        map[string]int64   `json:"usageDetails"`
	CostDetails         map[string]float64 `json:"costDetails,omitempty"`
	Metadata            map[string]any     `json:"metadata"`
	Level               string             `json:"level"`
	StatusMessage       string             `json:"statusMessage,omitempty"`
}

// Usage is a generation's usage (Langfuse's legacy usage object, which
// LiteLLM sends: input, output, total tokens and the total cost).
type Usage struct {
	Input     int64    `json:"input"`
	Output    int64    `json:"output"`
	Total     int64    `json:"total"`
	Unit      string   `json:"unit"`
	TotalCost *float64 `json:"totalCost,omitempty"`
}

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// Events returns a call's trace-create and generation-create events.
func Events(r *callbacks.Record) []Event {
	p := callbacks.NewPayload(r) // LiteLLM's call_type and metadata names
	traceName := "litellm-" + p.CallType
	genName := traceName
	if r.KeyAlias != "" {
		genName = "litellm:" + r.KeyAlias
	}
	level, status := "DEFAULT", ""
	output := r.Response
	if !r.Success() {
		level, status = "ERROR", *p.ErrorStr
		output, _ = json.Marshal(status)
	}
	tags := append([]string{}, r.Tags...)
	meta := map[string]any{
		"litellm_response_cost":    costOrNil(r),
		"hidden_params":            p.HiddenParams,
		"cache_hit":                false,
		"user_api_key_end_user_id": nilIfEmpty(r.EndUser),
	}
	for k, v := range map[string]string{
		"user_api_key_hash": r.KeyHash, "user_api_key_alias": r.KeyAlias, "user_api_key_team_id": r.TeamID,
		"user_api_key_user_id": r.UserID, "user_api_key_org_id": r.OrganizationID,
	} {
		if v != "" { // redact_user_api_key_info leaves them empty: not sent
			meta[k] = v
		}
	}
	if r.APIBase != "" {
		meta["api_base"] = r.APIBase
	}
	if len(r.Metadata) > 0 {
		meta["requester_metadata"] = r.Metadata
	}
	g := Generation{
		ID: r.CallID, TraceID: r.CallID, Name: genName, StartTime: ts(r.Start), EndTime: ts(r.End),
		Model: r.Model, ModelParameters: map[string]any{}, Input: r.Messages, Output: output,
		Usage:        Usage{Input: r.PromptTokens, Output: r.CompletionTokens, Total: r.TotalTokens(), Unit: "TOKENS"},
		UsageDetails: map[string]int64{"input": r.PromptTokens, "output": r.CompletionTokens, "total": r.TotalTokens(), "cache_read_input_tokens": r.CachedTokens},
		Metadata:     meta, Level: level, StatusMessage: status,
	}
	if g.Model == "" {
		g.Model = r.ModelGroup
	}
	if r.CostKnown {
		c := r.Cost()
		g.Usage.TotalCost = &c
		g.CostDetails = map[string]float64{"total": c}
	}
	if !r.CompletionStart.IsZero() {
		g.CompletionStartTime = ts(r.CompletionStart)
	}
	t := Trace{ID: r.CallID, Timestamp: ts(r.Start), Name: traceName, UserID: r.EndUser, Input: r.Messages, Output: output, Tags: tags}
	if !r.Success() {
		t.Output = nil // LiteLLM sets the trace's status message, not its output, on an error
	}
	at := ts(r.End)
	return []Event{
		{ID: r.CallID + "-trace", Type: "trace-create", Timestamp: at, Body: t},
		{ID: r.CallID + "-generation", Type: "generation-create", Timestamp: at, Body: g},
	}
}

func costOrNil(r *callbacks.Record) any {
	if !r.CostKnown {
		return nil
	}
	return r.Cost()
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
