package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// mustParse parses s, failing the test on an error, and returns the request,
// the body it was parsed from, and a copy of it (to check that nothing
// modifies the body).
func mustParse(t *testing.T, s string) (r *Request, body, orig []byte) {
	t.Helper()
	body = []byte(s)
	orig = bytes.Clone(body)
	r, err := Parse(body)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return r, body, orig
}

// fields is what a test compares of a parsed Request (everything but Body and
// the unexported offsets).
type fields struct {
	Model         string
	Stream        bool
	IncludeUsage  bool
	MaxTokens     int64
	N             int64
	Fallbacks     []string
	FallbacksSet  bool
	NoFallbacks   bool
	NumRetries    int
	Tags          []string
	MockResponse  string
	HasMock       bool
	User          string
	Timeout       time.Duration
	StreamTimeout time.Duration
	MockTesting   MockTest
}

func fieldsOf(r *Request) fields {
	return fields{
		Model: r.Model, Stream: r.Stream, IncludeUsage: r.IncludeUsage, MaxTokens: r.MaxTokens, N: r.N,
		Fallbacks: r.Fallbacks, FallbacksSet: r.FallbacksSet, NoFallbacks: r.NoFallbacks,
		NumRetries: r.NumRetries, Tags: r.Tags, MockResponse: r.MockResponse, HasMock: r.HasMock, User: r.User,
		Timeout: r.Timeout, StreamTimeout: r.StreamTimeout, MockTesting: r.MockTesting,
	}
}

func (f fields) equal(g fields) bool {
	return f.Model == g.Model && f.Stream == g.Stream && f.IncludeUsage == g.IncludeUsage &&
		f.MaxTokens == g.MaxTokens && f.N == g.N && slices.Equal(f.Fallbacks, g.Fallbacks) &&
		f.FallbacksSet == g.FallbacksSet && f.NoFallbacks == g.NoFallbacks && f.NumRetries == g.NumRetries &&
		slices.Equal(f.Tags, g.Tags) && f.MockResponse == g.MockResponse && f.HasMock == g.HasMock && f.User == g.User &&
		f.Timeout == g.Timeout && f.StreamTimeout == g.StreamTimeout && f.MockTesting == g.MockTesting
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want fields
	}{
		{"minimal", `{"model":"gpt-4o"}`, fields{Model: "gpt-4o", NumRetries: -1}},
		{
			"model not first, whitespace everywhere",
			"{\n\t\"messages\" : [ {\"role\":\"user\",\"content\":\"hi\"} ] ,\r\n  \"model\"\t:\n \"gpt-4o\" \n}",
			fields{Model: "gpt-4o", NumRetries: -1},
		},
		{
			"escaped quotes, backslash and unicode in model",
			`{"model":"a\"b\\c\u00e9\ud83d\ude00/\/"}`,
			fields{Model: "a\"b\\cé😀//", NumRetries: -1},
		},
		{
			"raw utf-8 model",
			`{"model":"模型-ä"}`,
			fields{Model: "模型-ä", NumRetries: -1},
		},
		{
			"nested model keys are not the model",
			`{"messages":[{"role":"user","content":"x","model":"inner"}],"metadata":{"model":"meta"},"model":"outer"}`,
			fields{Model: "outer", NumRetries: -1},
		},
		{
			"escaped key name still matches",
			`{"mod\u0065l":"gpt-4o","str\u0065am":true}`,
			fields{Model: "gpt-4o", Stream: true, NumRetries: -1},
		},
		{"model null", `{"model":null}`, fields{NumRetries: -1}},
		{"model absent", `{"messages":[]}`, fields{NumRetries: -1}},
		{"empty object", `{}`, fields{NumRetries: -1}},
		{"stream true", `{"model":"m","stream":true}`, fields{Model: "m", Stream: true, NumRetries: -1}},
		{"user", `{"model":"m","user":"end-user-7"}`, fields{Model: "m", User: "end-user-7", NumRetries: -1}},
		{"user not a string ignored", `{"model":"m","user":7}`, fields{Model: "m", NumRetries: -1}},
		{"stream false", `{"model":"m","stream":false}`, fields{Model: "m", NumRetries: -1}},
		{"stream null", `{"model":"m","stream":null}`, fields{Model: "m", NumRetries: -1}},
		{
			"include_usage true",
			`{"model":"m","stream":true,"stream_options":{"include_usage":true}}`,
			fields{Model: "m", Stream: true, IncludeUsage: true, NumRetries: -1},
		},
		{
			"include_usage false",
			`{"model":"m","stream":true,"stream_options":{"include_usage":false}}`,
			fields{Model: "m", Stream: true, NumRetries: -1},
		},
		{
			"include_usage as a string is not true",
			`{"model":"m","stream_options":{"include_usage":"true"}}`,
			fields{Model: "m", NumRetries: -1},
		},
		{"max_tokens", `{"model":"m","max_tokens":256}`, fields{Model: "m", MaxTokens: 256, NumRetries: -1}},
		{
			"larger of max_tokens and max_completion_tokens",
			`{"model":"m","max_completion_tokens":900,"max_tokens":256}`,
			fields{Model: "m", MaxTokens: 900, NumRetries: -1},
		},
		{"negative max_tokens ignored", `{"model":"m","max_tokens":-5}`, fields{Model: "m", NumRetries: -1}},
		// max_tokens and n beyond int64 saturate instead of reading as
		// math.MinInt64 (gjson's Int of 1e300).
		{"max_tokens and n", `{"max_tokens":100,"n":3}`, fields{MaxTokens: 100, N: 3, NumRetries: -1}},
		{"max_tokens 2^63-1", `{"max_tokens":9223372036854775807}`, fields{MaxTokens: math.MaxInt64, NumRetries: -1}},
		{"max_tokens 2^63 saturates", `{"max_tokens":9223372036854775808}`, fields{MaxTokens: math.MaxInt64, NumRetries: -1}},
		{"max_completion_tokens 1e300 saturates", `{"max_completion_tokens":1e300}`, fields{MaxTokens: math.MaxInt64, NumRetries: -1}},
		{"-1e300 and a negative n", `{"max_tokens":-1e300,"n":-5}`, fields{N: -5, NumRetries: -1}},
		{"2^62 with n 128", `{"max_tokens":4611686018427387904,"n":128}`, fields{MaxTokens: 1 << 62, N: 128, NumRetries: -1}},
		{"n as a string ignored", `{"n":"4"}`, fields{NumRetries: -1}},
		{
			"fallbacks as strings",
			`{"model":"m","fallbacks":["a","b"]}`,
			fields{Model: "m", Fallbacks: []string{"a", "b"}, FallbacksSet: true, NumRetries: -1},
		},
		{
			"fallbacks as objects, mixed, junk skipped",
			`{"model":"m","fallbacks":[{"model":"x"},"y",{"model":7},3,null,{"other":"z"},{"model":"w","messages":[]}]}`,
			fields{Model: "m", Fallbacks: []string{"x", "y", "w"}, FallbacksSet: true, NumRetries: -1},
		},
		{
			"empty fallbacks are set",
			`{"model":"m","fallbacks":[]}`,
			fields{Model: "m", FallbacksSet: true, NumRetries: -1},
		},
		{
			"disable_fallbacks",
			`{"model":"m","disable_fallbacks":true}`,
			fields{Model: "m", NoFallbacks: true, NumRetries: -1},
		},
		{
			"disable_fallbacks false",
			`{"model":"m","disable_fallbacks":false}`,
			fields{Model: "m", NumRetries: -1},
		},
		{"num_retries 3", `{"model":"m","num_retries":3}`, fields{Model: "m", NumRetries: 3}},
		{"num_retries 0", `{"model":"m","num_retries":0}`, fields{Model: "m", NumRetries: 0}},
		{"num_retries 10", `{"model":"m","num_retries":10}`, fields{Model: "m", NumRetries: 10}},
		{"num_retries 11 clamped", `{"model":"m","num_retries":11}`, fields{Model: "m", NumRetries: 10}},
		{"num_retries 1e30 clamped", `{"model":"m","num_retries":1e30}`, fields{Model: "m", NumRetries: 10}},
		{
			"num_retries beyond int64 clamped",
			`{"model":"m","num_retries":99999999999999999999}`,
			fields{Model: "m", NumRetries: 10},
		},
		{"num_retries -1 ignored", `{"model":"m","num_retries":-1}`, fields{Model: "m", NumRetries: -1}},
		{"num_retries -1e30 ignored", `{"model":"m","num_retries":-1e30}`, fields{Model: "m", NumRetries: -1}},
		{"num_retries fraction truncated", `{"model":"m","num_retries":2.9}`, fields{Model: "m", NumRetries: 2}},
		{"num_retries string ignored", `{"model":"m","num_retries":"3"}`, fields{Model: "m", NumRetries: -1}},
		{
			"tags then metadata.tags, non-strings skipped",
			`{"model":"m","tags":["a",1],"metadata":{"tags":["b",null,"c"],"user":"u"}}`,
			fields{Model: "m", Tags: []string{"a", "b", "c"}, NumRetries: -1},
		},
		{
			"metadata without tags",
			`{"model":"m","metadata":{"user":"u"}}`,
			fields{Model: "m", NumRetries: -1},
		},
		{
			"mock_response",
			`{"model":"m","mock_response":"litellm.RateLimitError"}`,
			fields{Model: "m", MockResponse: "litellm.RateLimitError", HasMock: true, NumRetries: -1},
		},
		{
			"mock_response empty string",
			`{"model":"m","mock_response":""}`,
			fields{Model: "m", HasMock: true, NumRetries: -1},
		},
		{"timeout seconds", `{"model":"m","timeout":1.5}`, fields{Model: "m", NumRetries: -1, Timeout: 1500 * time.Millisecond}},
		{"timeout string", `{"model":"m","timeout":"2"}`, fields{Model: "m", NumRetries: -1, Timeout: 2 * time.Second}},
		{"request_timeout", `{"model":"m","request_timeout":3}`, fields{Model: "m", NumRetries: -1, Timeout: 3 * time.Second}},
		{"stream_timeout", `{"model":"m","stream_timeout":0.5}`, fields{Model: "m", NumRetries: -1, StreamTimeout: 500 * time.Millisecond}},
		{"timeout null", `{"model":"m","timeout":null}`, fields{Model: "m", NumRetries: -1}},
		{"timeout capped at a day", `{"model":"m","timeout":1e300}`, fields{Model: "m", NumRetries: -1, Timeout: 24 * time.Hour}},
		{"mock_testing_fallbacks", `{"model":"m","mock_testing_fallbacks":true}`, fields{Model: "m", NumRetries: -1, MockTesting: MockFallbacks}},
		{"mock_testing_context_fallbacks", `{"model":"m","mock_testing_context_fallbacks":true}`, fields{Model: "m", NumRetries: -1, MockTesting: MockContextWindow}},
		{"mock_testing_content_policy_fallbacks", `{"model":"m","mock_testing_content_policy_fallbacks":true}`, fields{Model: "m", NumRetries: -1, MockTesting: MockContentPolicy}},
		{"mock_testing_rate_limit_error", `{"model":"m","mock_testing_rate_limit_error":true}`, fields{Model: "m", NumRetries: -1, MockTesting: MockRateLimit}},
		{"mock_testing false", `{"model":"m","mock_testing_fallbacks":false}`, fields{Model: "m", NumRetries: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, body, orig := mustParse(t, tt.body)
			if got := fieldsOf(r); !got.equal(tt.want) {
				t.Errorf("Parse(%s)\n got %+v\nwant %+v", tt.body, got, tt.want)
			}
			if !bytes.Equal(r.Body, orig) {
				t.Errorf("Body = %s, want the input", r.Body)
			}
			if !bytes.Equal(body, orig) {
				t.Errorf("input modified: %s", body)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		invalid   bool   // IsInvalidJSON
		wantMsg   string // error text
		wantParam string // FieldError.Param, "" when not a FieldError
	}{
		{"empty", ``, true, "request body is not valid JSON", ""},
		{"whitespace only", " \n\t", true, "request body is not valid JSON", ""},
		{"truncated", `{"model":"gpt-4o"`, true, "request body is not valid JSON", ""},
		{"trailing garbage", `{"model":"m"} x`, true, "request body is not valid JSON", ""},
		{"trailing comma", `{"model":"m",}`, true, "request body is not valid JSON", ""},
		{"single quotes", `{'model':'m'}`, true, "request body is not valid JSON", ""},
		{"bad escape", `{"model":"\x"}`, true, "request body is not valid JSON", ""},
		{"array", `[{"model":"m"}]`, true, "request body must be a JSON object", ""},
		{"string", `"model"`, true, "request body must be a JSON object", ""},
		{"number", `42`, true, "request body must be a JSON object", ""},
		{"null", `null`, true, "request body must be a JSON object", ""},
		{"true", `true`, true, "request body must be a JSON object", ""},
		{"model number", `{"model":4}`, false, "'model' must be a string", "model"},
		{"model object", `{"model":{"name":"m"}}`, false, "'model' must be a string", "model"},
		{"model array", `{"model":["m"]}`, false, "'model' must be a string", "model"},
		{"model bool", `{"model":true}`, false, "'model' must be a string", "model"},
		{"stream string", `{"model":"m","stream":"true"}`, false, "'stream' must be a boolean", "stream"},
		{"stream number", `{"model":"m","stream":1}`, false, "'stream' must be a boolean", "stream"},
		{"stream object", `{"stream":{},"model":"m"}`, false, "'stream' must be a boolean", "stream"},
		{"n above 128", `{"n":129}`, false, "Invalid 'n': integer above maximum value. Expected a value <= 128, but got 129 instead.", "n"},
		{"n 1e300", `{"n":1e300}`, false, "Invalid 'n': integer above maximum value. Expected a value <= 128, but got 1e300 instead.", "n"},
		{"n 2^63-1", `{"n":9223372036854775807}`, false, "Invalid 'n': integer above maximum value. Expected a value <= 128, but got 9223372036854775807 instead.", "n"},
		{"timeout zero", `{"timeout":0}`, false, "'timeout' must be a positive number of seconds", "timeout"},
		{"timeout negative", `{"timeout":-1}`, false, "'timeout' must be a positive number of seconds", "timeout"},
		{"timeout word", `{"timeout":"soon"}`, false, "'timeout' must be a number of seconds", "timeout"},
		{"request_timeout object", `{"request_timeout":{}}`, false, "'request_timeout' must be a number of seconds", "request_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse([]byte(tt.body))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.body, r)
			}
			if r != nil {
				t.Errorf("Parse returned a request with the error: %+v", r)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("error = %q, want %q", err, tt.wantMsg)
			}
			if got := IsInvalidJSON(err); got != tt.invalid {
				t.Errorf("IsInvalidJSON = %v, want %v", got, tt.invalid)
			}
			var fe *FieldError
			isField := errors.As(err, &fe)
			if isField != (tt.wantParam != "") {
				t.Fatalf("error %T is FieldError = %v, want %v", err, isField, tt.wantParam != "")
			}
			if isField && (fe.Param != tt.wantParam || fe.Msg != tt.wantMsg) {
				t.Errorf("FieldError = %+v, want Param %q Msg %q", fe, tt.wantParam, tt.wantMsg)
			}
		})
	}
}

// semantic decodes a JSON document for comparison regardless of key order and
// spacing.
func semantic(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return m
}

func sameArray(a, b []byte) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}

func TestWithModel(t *testing.T) {
	big := strings.Repeat(`{\"model\":\"outer\"} `, 1<<16) // 1.3 MB of content that looks like a model key
	tests := []struct {
		name   string
		body   string
		model  string
		inject bool
		want   string // "" means: the input itself, unchanged and not copied
	}{
		{"same model, nothing to do", `{"model":"gpt-4o","messages":[]}`, "gpt-4o", false, ""},
		{"inject without stream", `{"model":"gpt-4o"}`, "gpt-4o", true, ""},
		{
			"inject when usage already requested",
			`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}`, "gpt-4o", true, "",
		},
		{"no inject asked", `{"model":"gpt-4o","stream":true}`, "gpt-4o", false, ""},
		{"replace", `{"model":"alias","messages":[]}`, "gpt-4o", false, `{"model":"gpt-4o","messages":[]}`},
		{
			"request controls are not forwarded",
			`{"model":"gpt-4o","timeout":5,"request_timeout":5,"stream_timeout":1,"mock_testing_fallbacks":true,"mock_testing_context_fallbacks":false,"mock_testing_content_policy_fallbacks":true,"mock_testing_rate_limit_error":true,"messages":[]}`,
			"gpt-4o", false, `{"model":"gpt-4o","messages":[]}`,
		},
		{
			"model not first, whitespace kept valid",
			"{\n  \"messages\": [\n    {\"role\": \"user\", \"content\": \"hi\"}\n  ],\n  \"model\" :\t\"alias\" ,\n  \"n\": 2\n}\n",
			"gpt-4o", false,
			`{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o","n":2}`,
		},
		{
			"nested model keys untouched",
			`{"messages":[{"role":"user","content":"{\"model\":\"alias\"}","model":"alias"}],"tools":[{"model":"alias"}],"model":"alias"}`,
			"gpt-4o", false,
			`{"messages":[{"role":"user","content":"{\"model\":\"alias\"}","model":"alias"}],"tools":[{"model":"alias"}],"model":"gpt-4o"}`,
		},
		{
			"original model with escapes",
			`{"model":"a\"b\\c\u00e9","x":1}`, "plain", false,
			`{"model":"plain","x":1}`,
		},
		{
			"new model with quotes, backslash, unicode",
			`{"model":"alias","x":1}`, "gpt-\"4o\"\\é😀\u2028/", false,
			`{"model":"gpt-\"4o\"\\é😀\u2028/","x":1}`,
		},
		{
			"new model with control characters",
			`{"model":"alias"}`, "a\x00b\x07c\x0bd\x7fe\tf\ng", false,
			`{"model":"a\u0000b\u0007c\u000bd\u007fe\tf\ng"}`,
		},
		{
			"same model re-encoded with control characters",
			`{"model":"a\u0007b","tags":["t"]}`, "a\x07b", false,
			`{"model":"a\u0007b"}`,
		},
		{
			"shorter and longer models keep the rest",
			`{"model":"a-very-long-alias-name","z":[1,2,3]}`, "m", false,
			`{"model":"m","z":[1,2,3]}`,
		},
		{
			"empty new model",
			`{"model":"alias","z":true}`, "", false,
			`{"model":"","z":true}`,
		},
		{
			"every gateway field removed",
			`{"fallbacks":[{"model":"x"}],"model":"alias","disable_fallbacks":true,"num_retries":3,"mock_response":"hi","tags":["a"],"metadata":{"tags":["b"]},"messages":[{"role":"user","content":"hi"}]}`,
			"gpt-4o", false,
			`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		},
		{
			"gateway fields removed with the same model",
			`{"model":"gpt-4o","num_retries":1}`, "gpt-4o", false,
			`{"model":"gpt-4o"}`,
		},
		{
			"drop_params is the gateway's",
			`{"model":"gpt-4o","drop_params":true,"n":2}`, "gpt-4o", false,
			`{"model":"gpt-4o","n":2}`,
		},
		{
			"gateway field last, with whitespace",
			"{\"model\": \"alias\",\n \"temperature\": 0.5,\n \"tags\": [\"a\"]\n}", "gpt-4o", false,
			`{"model":"gpt-4o","temperature":0.5}`,
		},
		{
			"gateway-like names nested are kept",
			`{"model":"alias","messages":[{"role":"user","content":"x","tags":["keep"]}],"response_format":{"metadata":1}}`,
			"gpt-4o", false,
			`{"model":"gpt-4o","messages":[{"role":"user","content":"x","tags":["keep"]}],"response_format":{"metadata":1}}`,
		},
		{
			"inject usage",
			`{"model":"alias","stream":true}`, "gpt-4o", true,
			`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			"inject usage, same model",
			`{"model":"gpt-4o","stream":true}`, "gpt-4o", true,
			`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			"inject usage over include_usage false, other options kept",
			`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":false,"x":1}}`, "gpt-4o", true,
			`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true,"x":1}}`,
		},
		{
			"inject usage over null stream_options",
			`{"model":"gpt-4o","stream":true,"stream_options":null}`, "gpt-4o", true,
			`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			"model, gateway fields and usage at once",
			`{"model":"alias","stream":true,"fallbacks":["b"],"metadata":{"tags":["t"]}}`, "gpt-4o", true,
			`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			"huge body, model last",
			`{"messages":[{"role":"user","content":"` + big + `"}],"model":"outer","tags":["a"]}`, "inner", false,
			`{"messages":[{"role":"user","content":"` + big + `"}],"model":"inner"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, body, orig := mustParse(t, tt.body)
			out := r.WithModel(tt.model, tt.inject)
			if !bytes.Equal(body, orig) {
				t.Fatal("WithModel modified its input")
			}
			if tt.want == "" {
				if !sameArray(out, body) || len(out) != len(body) {
					t.Fatalf("WithModel = %s, want the input slice itself", out)
				}
				return
			}
			if sameArray(out, body) {
				t.Fatal("WithModel changed the body but returned memory shared with the input")
			}
			if !json.Valid(out) {
				t.Fatalf("WithModel produced invalid JSON: %.300s", out)
			}
			if got, want := semantic(t, out), semantic(t, []byte(tt.want)); !reflect.DeepEqual(got, want) {
				t.Errorf("WithModel(%q, %v)\n got %.300s\nwant %.300s", tt.model, tt.inject, out, tt.want)
			}
			back, err := Parse(out)
			if err != nil {
				t.Fatalf("Parse(output): %v", err)
			}
			if back.Model != tt.model {
				t.Errorf("model of the output = %q, want %q", back.Model, tt.model)
			}
			if back.gatewayFields {
				t.Errorf("output still has gateway fields: %.300s", out)
			}
			// A second attempt (another deployment) starts from the same request.
			again := r.WithModel(tt.model, tt.inject)
			if !bytes.Equal(again, out) {
				t.Errorf("second WithModel = %.300s, want %.300s", again, out)
			}
		})
	}
}

// TestWithModelOutputIsIndependent checks that editing one attempt's body
// cannot leak into the request or another attempt's body.
func TestWithModelOutputIsIndependent(t *testing.T) {
	r, err := Parse([]byte(`{"model":"alias","tags":["a"],"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	a := r.WithModel("one", false)
	b := r.WithModel("two", false)
	for i := range a {
		a[i] = 'x'
	}
	if want := `{"model":"two","messages":[]}`; !reflect.DeepEqual(semantic(t, b), semantic(t, []byte(want))) {
		t.Errorf("second body = %s, want %s", b, want)
	}
	if want := `{"model":"alias","tags":["a"],"messages":[]}`; string(r.Body) != want {
		t.Errorf("request body = %s, want %s", r.Body, want)
	}
}

func TestOp(t *testing.T) {
	tests := []struct {
		op         Op
		name, path string
	}{
		{OpChat, "chat", "/chat/completions"},
		{OpEmbeddings, "embeddings", "/embeddings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.op.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			if got := tt.op.Path(); got != tt.path {
				t.Errorf("Path() = %q, want %q", got, tt.path)
			}
		})
	}
}
