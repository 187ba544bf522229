// Package wire holds what the gateway reads of OpenAI's wire format: the few
// request fields it interprets (found without decoding the whole body), the
// call handed to a provider, and usage read back from responses.
//
// Everything else in a request or response passes through byte for byte.
package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// Op is the API operation of a call.
type Op uint8

const (
	OpChat Op = iota
	OpEmbeddings
	OpResponses   // OpenAI's Responses API (POST /v1/responses)
	OpMessages    // Anthropic's Messages API (POST /v1/messages); messages.go
	OpCountTokens // Anthropic's POST /v1/messages/count_tokens
)

// ops names the first block's operations: LiteLLM's call_type and the
// path below an OpenAI base URL (Messages and count_tokens have none of
// their own there: chat's).
var ops = [...]struct{ name, path string }{
	OpChat:        {"chat", "/chat/completions"},
	OpEmbeddings:  {"embeddings", "/embeddings"},
	OpResponses:   {"responses", "/responses"},
	OpMessages:    {"anthropic_messages", "/chat/completions"}, // LiteLLM's call_type for /v1/messages
	OpCountTokens: {"count_tokens", "/chat/completions"},
}

// names is the operation's call_type and path; an unknown one is chat.
func (o Op) names() (name, path string) {
	if name, path, ok := o.extra(); ok { // ops.go
		return name, path
	}
	if int(o) < len(ops) {
		return ops[o].name, ops[o].path
	}
	return ops[OpChat].name, ops[OpChat].path
}

func (o Op) String() string { name, _ := o.names(); return name }

// Path is the operation's path below an OpenAI base URL.
func (o Op) Path() string { _, path := o.names(); return path }

// Call is one attempt's request, ready for a provider.
type Call struct {
	Op     Op
	Body   []byte // JSON body as the upstream must receive it
	Stream bool
	// PromptTokens is the gateway's estimate, used by mocks and limits.
	PromptTokens int
	// MockResponse is the request's own mock_response (not forwarded).
	MockResponse *string
	// DropParams is the request's own drop_params (not forwarded): a
	// translating provider drops the params it cannot send.
	DropParams bool
	// ContentType is the body's media type when it is not JSON (a
	// transcription's multipart form, with its boundary).
	ContentType string
	// Anthropic is, for OpMessages and OpCountTokens, the client's
	// anthropic-version and anthropic-beta headers, forwarded to Anthropic.
	Anthropic *AnthropicHeaders
}

// Request is what the gateway reads of a client's request body.
type Request struct {
	Body          []byte
	Model         string
	modelStart    int // byte offsets of the model value (with quotes) in Body
	modelEnd      int
	optsStart     int // byte offsets of the last stream_options value in Body
	optsEnd       int
	Stream        bool
	IncludeUsage  bool     // stream_options.include_usage
	streamOptions bool     // the body has a stream_options key
	MaxTokens     int64    // the larger of max_tokens and max_completion_tokens (0: neither)
	N             int64    // n, the number of choices (0: not given); at most MaxN
	Fallbacks     []string // per-request fallbacks
	// FallbackOverrides holds, beside Fallbacks, each fallback given as an
	// object ({"model": ..., "messages": ...}) as its raw JSON ("" for a
	// name); nil when none is an object (FallbackRequest).
	FallbackOverrides []string
	groupFallbacks    []gjson.Result // the {"group": [...]} form, until the model is known
	FallbacksSet      bool
	DropParams        bool     // "drop_params": true
	NoFallbacks       bool     // disable_fallbacks
	NumRetries        int      // per-request num_retries, -1 when absent
	Tags              []string // metadata.tags / tags
	User              string   // the end user the request is for ("user"); forwarded as is
	MockResponse      string   // per-request mock_response (mock deployments only)
	HasMock           bool
	// Timeout is the request's own timeout (LiteLLM's "timeout" or
	// "request_timeout", in seconds): it bounds each attempt, in place of
	// the deployment's timeout and stream_timeout. 0: not given.
	Timeout time.Duration
	// StreamTimeout is the request's own stream_timeout (seconds): it
	// bounds a stream's wait for its first chunk, in place of Timeout.
	StreamTimeout time.Duration
	// MockTesting is the first of LiteLLM's mock_testing_* switches set to
	// true: the requested model group fails as named, without an upstream
	// call, so that fallbacks and retries can be tried.
	MockTesting   MockTest
	gatewayFields bool // the body has fields only the gateway reads
	renamed       bool // Model is not the body's model (Rename)
	responses     bool // a Responses API body (ParseResponses)
	routeFields   bool // ... other than metadata (messages.go)
}

// MockTest names one of LiteLLM's mock_testing_* request switches.
type MockTest uint8

const (
	MockNone          MockTest = iota
	MockFallbacks              // mock_testing_fallbacks: a server error
	MockContextWindow          // mock_testing_context_fallbacks: a context-window error
	MockContentPolicy          // mock_testing_content_policy_fallbacks: a content-policy refusal
	MockRateLimit              // mock_testing_rate_limit_error: a 429
)

// mockTests maps each switch to its MockTest.
var mockTests = map[string]MockTest{
	"mock_testing_fallbacks":                MockFallbacks,
	"mock_testing_context_fallbacks":        MockContextWindow,
	"mock_testing_content_policy_fallbacks": MockContentPolicy,
	"mock_testing_rate_limit_error":         MockRateLimit,
}

// FieldError is a request field of the wrong type.
type FieldError struct {
	Param string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

// Parse reads the fields the gateway interprets. It does not validate the
// rest of the body (the upstream does), only its nesting (CheckDepth).
func Parse(body []byte) (*Request, error) { return parse(body, false) }

func parse(body []byte, responses bool) (*Request, error) {
	if err := CheckDepth(body); err != nil { // before gjson recurses
		return nil, err
	}
	if !gjson.ValidBytes(body) {
		return nil, errInvalidJSON
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, errNotObject
	}
	r := &Request{Body: body, NumRetries: -1, responses: responses}
	var ferr *FieldError
	var keys keySet
	root.ForEach(func(k, v gjson.Result) bool {
		if !keys.add(k.Str) {
			ferr = duplicateKey(k.Str)
			return false
		}
		switch k.Str {
		case "model":
			switch v.Type {
			case gjson.String:
				r.Model = v.Str
				r.modelStart = v.Index
				r.modelEnd = v.Index + len(v.Raw)
			case gjson.Null: // no model
			default:
				ferr = &FieldError{Param: "model", Msg: "'model' must be a string"}
			}
		case "stream":
			switch v.Type {
			case gjson.True:
				r.Stream = true
			case gjson.False, gjson.Null:
			default:
				ferr = &FieldError{Param: "stream", Msg: "'stream' must be a boolean"}
			}
		case "stream_options":
			r.streamOptions = true
			r.optsStart, r.optsEnd = v.Index, v.Index+len(v.Raw)
			r.IncludeUsage = false
			v.ForEach(func(k, f gjson.Result) bool { // the last include_usage wins
				if k.Str == "include_usage" {
					r.IncludeUsage = f.Type == gjson.True
				}
				return true
			})
		case "max_tokens", "max_completion_tokens":
			if n := intSat(v); n > r.MaxTokens {
				r.MaxTokens = n
			}
		case "n":
			// OpenAI refuses n above 128; so does the gateway, rather than
			// reserve (strict budgets) for a request the upstream refuses.
			if v.Type == gjson.Number {
				if r.N = intSat(v); r.N > MaxN {
					ferr = &FieldError{Param: "n", Msg: fmt.Sprintf("Invalid 'n': integer above maximum value. Expected a value <= %d, but got %s instead.", MaxN, v.Raw)}
				}
			}
		case "fallbacks":
			r.gatewayFields, r.routeFields = true, true
			r.fallbacks(v) // fallbacks.go
		case "disable_fallbacks":
			r.gatewayFields, r.routeFields = true, true
			r.NoFallbacks = v.Type == gjson.True
		case "num_retries":
			r.gatewayFields, r.routeFields = true, true
			if v.Type == gjson.Number && v.Int() >= 0 {
				r.NumRetries = int(min(v.Int(), 10))
			}
		case "user":
			if v.Type == gjson.String {
				r.User = v.Str
			}
		case "tags":
			r.gatewayFields, r.routeFields = true, true
			r.Tags = appendStrings(r.Tags, v)
		case "metadata":
			if responses { // a Responses field, stored with the response: forwarded
				break
			}
			r.gatewayFields = true
			r.Tags = appendStrings(r.Tags, v.Get("tags"))
		case "litellm_metadata": // where LiteLLM's Responses route reads tags
			if responses {
				r.gatewayFields = true
				r.Tags = appendStrings(r.Tags, v.Get("tags"))
			}
		case "max_output_tokens":
			if n := intSat(v); responses && n > r.MaxTokens {
				r.MaxTokens = n
			}
		case "drop_params": // for the translators that drop (anthropic); not forwarded
			r.gatewayFields, r.routeFields = true, true
			r.DropParams = v.Type == gjson.True
		case "mock_response":
			r.gatewayFields, r.routeFields = true, true
			if v.Type != gjson.Null { // null means no mock, as in LiteLLM
				r.MockResponse, r.HasMock = v.String(), true
			}
		case "timeout", "request_timeout":
			r.gatewayFields, r.routeFields = true, true
			if v.Type != gjson.Null { // null: no timeout, as in LiteLLM
				r.Timeout, ferr = timeoutOf(k.Str, v)
			}
		case "stream_timeout":
			r.gatewayFields, r.routeFields = true, true
			if v.Type != gjson.Null {
				r.StreamTimeout, ferr = timeoutOf(k.Str, v)
			}
		case "mock_testing_fallbacks", "mock_testing_context_fallbacks", "mock_testing_content_policy_fallbacks", "mock_testing_rate_limit_error":
			r.gatewayFields, r.routeFields = true, true
			if v.Type == gjson.True && r.MockTesting == MockNone {
				r.MockTesting = mockTests[k.Str]
			}
		}
		return ferr == nil
	})
	if ferr != nil {
		return nil, ferr
	}
	r.resolveGroupFallbacks()
	return r, nil
}

// timeoutOf reads a timeout in seconds: a number, or a string holding one
// (LiteLLM accepts both). A value that is not positive is refused.
func timeoutOf(param string, v gjson.Result) (time.Duration, *FieldError) {
	secs := v.Num
	switch v.Type {
	case gjson.Number:
	case gjson.String:
		f, err := strconv.ParseFloat(strings.TrimSpace(v.Str), 64)
		if err != nil {
			return 0, &FieldError{Param: param, Msg: fmt.Sprintf("'%s' must be a number of seconds", param)}
		}
		secs = f
	default:
		return 0, &FieldError{Param: param, Msg: fmt.Sprintf("'%s' must be a number of seconds", param)}
	}
	if d := SecondsDuration(secs); d > 0 {
		return d, nil
	}
	return 0, &FieldError{Param: param, Msg: fmt.Sprintf("'%s' must be a positive number of seconds", param)}
}

// SecondsDuration converts a positive number of seconds to a Duration,
// capped at a day; 0 for anything else (NaN, negative, zero).
func SecondsDuration(secs float64) time.Duration {
	if !(secs > 0) {
		return 0
	}
	if secs > 86400 {
		secs = 86400
	}
	return max(time.Duration(secs*float64(time.Second)), time.Millisecond)
}

// MaxN is the largest n a request may ask for, as at OpenAI.
const MaxN = 128

// intSat reads a JSON number as an int64, saturating a value beyond its
// range (gjson's Int turns 1e300 or 2^63 into math.MinInt64).
func intSat(v gjson.Result) int64 {
	switch {
	case v.Type != gjson.Number:
		return v.Int()
	case v.Num >= math.MaxInt64:
		return math.MaxInt64
	case v.Num <= math.MinInt64:
		return math.MinInt64
	}
	return v.Int()
}

// keySet holds the keys of the request object as Parse reads them. A
// repeated key is refused rather than resolved: the gateway would read one
// value (the last, as encoding/json and Python do) while gjson's Get, which
// the translators use, reads the first, so a body could be routed and
// checked as one model and sent as another.
//
// A request has a dozen keys: they are compared in an array, with no
// allocation; a map takes over beyond that, so that a body of a million
// keys costs no quadratic time.
type keySet struct {
	few  [16]string
	n    int
	many map[string]struct{}
}

// add adds k, and reports false when it was there already.
func (s *keySet) add(k string) bool {
	if s.many != nil {
		if _, ok := s.many[k]; ok {
			return false
		}
		s.many[k] = struct{}{}
		return true
	}
	for _, have := range s.few[:s.n] {
		if have == k {
			return false
		}
	}
	if s.n < len(s.few) {
		s.few[s.n] = k
		s.n++
		return true
	}
	s.many = make(map[string]struct{}, 2*len(s.few))
	for _, have := range s.few {
		s.many[have] = struct{}{}
	}
	s.many[k] = struct{}{}
	return true
}

func duplicateKey(k string) *FieldError {
	name := k
	if len(name) > 64 {
		name = name[:64] + "..."
	}
	return &FieldError{Param: name, Msg: fmt.Sprintf("duplicate key %q in the request body: each key may appear once", name)}
}

func appendStrings(dst []string, v gjson.Result) []string {
	v.ForEach(func(_, s gjson.Result) bool {
		if s.Type == gjson.String {
			dst = append(dst, s.Str)
		}
		return true
	})
	return dst
}

// gatewayFields are request fields the gateway consumes; they are not sent
// upstream (OpenAI rejects unknown parameters).
var gatewayFields = append([]string{"metadata"}, routeOnly...)

// routeOnly are the gateway's own fields but metadata, which a Messages
// body keeps (Anthropic's own: user_id).
var routeOnly = []string{"fallbacks", "disable_fallbacks", "num_retries", "mock_response", "tags", "drop_params",
	"timeout", "request_timeout", "stream_timeout", "mock_testing_fallbacks", "mock_testing_context_fallbacks",
	"mock_testing_content_policy_fallbacks", "mock_testing_rate_limit_error"}

// WithModel returns the body with the model value replaced by model, and
// gateway-only fields removed. The original body is not modified; when
// nothing changes it is returned as is.
func (r *Request) WithModel(model string, injectUsage bool) []byte {
	inject := injectUsage && r.Stream && !r.IncludeUsage
	if model == r.Model && !r.renamed && !r.gatewayFields && !inject {
		return r.Body
	}
	q, _ := json.Marshal(model) // JSON, not Go, escapes: strconv.Quote writes \x7f, \a, \v
	// Values replaced in place, by byte offsets: the model, and the last
	// stream_options when usage is injected into one the body has.
	type splice struct {
		start, end int
		value      []byte
	}
	var edits [2]splice
	n := 0
	if r.modelEnd > 0 {
		edits[n] = splice{r.modelStart, r.modelEnd, q}
		n++
	}
	if inject && r.streamOptions {
		edits[n] = splice{r.optsStart, r.optsEnd, withIncludeUsage(r.Body[r.optsStart:r.optsEnd])}
		n++
	}
	if n == 2 && edits[1].start < edits[0].start {
		edits[0], edits[1] = edits[1], edits[0]
	}
	size := len(r.Body) + 40 // room for an injected stream_options
	for _, e := range edits[:n] {
		size += len(e.value) - (e.end - e.start)
	}
	out := make([]byte, 0, size)
	pos := 0
	for _, e := range edits[:n] {
		out = append(out, r.Body[pos:e.start]...)
		out = append(out, e.value...)
		pos = e.end
	}
	out = append(out, r.Body[pos:]...)
	if r.gatewayFields {
		if r.responses {
			out = deleteFields(out, responsesGatewayFields)
		} else {
			out = deleteFields(out, gatewayFields)
		}
	}
	if inject && !r.streamOptions {
		out = insertIncludeUsage(out)
	}
	return out
}
