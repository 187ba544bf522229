package callbacks

import (
	"encoding/json"
	"strconv"
	"time"
)

// Payload is LiteLLM's StandardLoggingPayload, the JSON its S3 and
// generic API loggers write per call (field names and types as LiteLLM's
// litellm/types/utils.py; what the gateway does not know is null or
// empty). Built by NewPayload; the S3 and generic_api sinks send it.
type Payload struct {
	ID                  string          `json:"id"`
	TraceID             string          `json:"trace_id"`
	CallType            string          `json:"call_type"`
	Stream              bool            `json:"stream"`
	ResponseCost        float64         `json:"response_cost"`
	CostNanos           *int64          `json:"response_cost_nanos"` // the spend log's exact cost (nano-USD); null when unknown
	Status              string          `json:"status"`              // "success" or "failure"
	CustomLLMProvider   string          `json:"custom_llm_provider"`
	TotalTokens         int64           `json:"total_tokens"`
	PromptTokens        int64           `json:"prompt_tokens"`
	CompletionTokens    int64           `json:"completion_tokens"`
	StartTime           float64         `json:"startTime"` // Unix seconds
	EndTime             float64         `json:"endTime"`
	CompletionStartTime float64         `json:"completionStartTime"`
	ResponseTime        float64         `json:"response_time"` // seconds
	Model               string          `json:"model"`
	ModelID             string          `json:"model_id"`
	ModelGroup          string          `json:"model_group"`
	APIBase             string          `json:"api_base"`
	Metadata            PayloadMetadata `json:"metadata"`
	CacheHit            bool            `json:"cache_hit"`
	RequestTags         []string        `json:"request_tags"`
	EndUser             string          `json:"end_user"`
	Messages            json.RawMessage `json:"messages"`
	Response            json.RawMessage `json:"response"`
	ErrorStr            *string         `json:"error_str"`
	ErrorInformation    *ErrorInfo      `json:"error_information"`
	ModelParameters     map[string]any  `json:"model_parameters"`
	HiddenParams        HiddenParams    `json:"hidden_params"`
}

// PayloadMetadata is StandardLoggingMetadata.
type PayloadMetadata struct {
	UserAPIKeyHash    *string         `json:"user_api_key_hash"`
	UserAPIKeyAlias   *string         `json:"user_api_key_alias"`
	UserAPIKeyOrgID   *string         `json:"user_api_key_org_id"`
	UserAPIKeyTeamID  *string         `json:"user_api_key_team_id"`
	UserAPIKeyUserID  *string         `json:"user_api_key_user_id"`
	UserAPIKeyEndUser *string         `json:"user_api_key_end_user_id"`
	RequesterMetadata json.RawMessage `json:"requester_metadata"`
	UsageObject       Usage           `json:"usage_object"`
}

// Usage is the call's usage as an OpenAI usage object.
type Usage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// ErrorInfo is StandardLoggingPayloadErrorInformation.
type ErrorInfo struct {
	ErrorCode    string `json:"error_code"`
	ErrorClass   string `json:"error_class"`
	LLMProvider  string `json:"llm_provider"`
	ErrorMessage string `json:"error_message"`
}

// HiddenParams is StandardLoggingHiddenParams.
type HiddenParams struct {
	ModelID          string  `json:"model_id"`
	APIBase          string  `json:"api_base"`
	ResponseCost     string  `json:"response_cost"`
	LiteLLMModelName string  `json:"litellm_model_name"`
	CacheKey         *string `json:"cache_key"`
}

// NewPayload returns r as LiteLLM's StandardLoggingPayload.
func NewPayload(r *Record) Payload {
	p := Payload{
		ID: r.CallID, TraceID: r.CallID, CallType: callType(r.CallType), Stream: r.Stream,
		ResponseCost: r.Cost(), Status: "success", CustomLLMProvider: r.Provider,
		TotalTokens: r.TotalTokens(), PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
		StartTime: unix(r.Start), EndTime: unix(r.End), CompletionStartTime: unix(r.End),
		ResponseTime: r.Latency().Seconds(),
		Model:        r.Model, ModelID: r.DeploymentID, ModelGroup: r.ModelGroup, APIBase: r.APIBase,
		RequestTags: r.Tags, EndUser: r.EndUser, Messages: r.Messages, Response: r.Response,
		ModelParameters: map[string]any{},
		HiddenParams: HiddenParams{ModelID: r.DeploymentID, APIBase: r.APIBase,
			ResponseCost: strconv.FormatFloat(r.Cost(), 'g', -1, 64), LiteLLMModelName: r.Model},
	}
	if p.RequestTags == nil {
		p.RequestTags = []string{}
	}
	if r.CostKnown {
		n := r.CostNanos
		p.CostNanos = &n
	}
	if !r.CompletionStart.IsZero() {
		p.CompletionStartTime = unix(r.CompletionStart)
	}
	if p.Messages == nil {
		p.Messages = json.RawMessage(`[]`)
	}
	if p.Response == nil {
		p.Response = json.RawMessage(`{}`)
	}
	m := &p.Metadata
	m.UserAPIKeyHash, m.UserAPIKeyAlias, m.UserAPIKeyOrgID = opt(r.KeyHash), opt(r.KeyAlias), opt(r.OrganizationID)
	m.UserAPIKeyTeamID, m.UserAPIKeyUserID, m.UserAPIKeyEndUser = opt(r.TeamID), opt(r.UserID), opt(r.EndUser)
	m.RequesterMetadata = r.Metadata
	if m.RequesterMetadata == nil {
		m.RequesterMetadata = json.RawMessage(`{}`)
	}
	m.UsageObject = Usage{PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, TotalTokens: r.TotalTokens()}
	m.UsageObject.PromptTokensDetails.CachedTokens = r.CachedTokens
	if !r.Success() {
		p.Status = "failure"
		msg := r.Error
		if msg == "" {
			msg = string(r.Status)
		}
		p.ErrorStr = &msg
		p.ErrorInformation = &ErrorInfo{ErrorCode: strconv.Itoa(r.StatusCode), ErrorClass: errorClass(r.StatusCode),
			LLMProvider: r.Provider, ErrorMessage: msg}
	}
	return p
}

// callType maps the event's operation to LiteLLM's call_type.
func callType(op string) string {
	switch op {
	case "chat":
		return "acompletion"
	case "completions":
		return "atext_completion"
	case "responses":
		return "aresponses"
	case "embeddings":
		return "aembedding"
	case "images":
		return "aimage_generation"
	case "":
		return "acompletion"
	}
	return op
}

// errorClass is the OpenAI exception class LiteLLM would name for status.
func errorClass(status int) string {
	switch status {
	case 400:
		return "BadRequestError"
	case 401:
		return "AuthenticationError"
	case 403:
		return "PermissionDeniedError"
	case 404:
		return "NotFoundError"
	case 408:
		return "Timeout"
	case 429:
		return "RateLimitError"
	case 499:
		return "ClientDisconnected"
	case 503:
		return "ServiceUnavailableError"
	}
	if status >= 500 {
		return "InternalServerError"
	}
	return "APIError"
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
