package providers

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

const azureKey = "0123456789abcdef0123456789abcdef"

func TestClassify(t *testing.T) {
	d := &config.Deployment{ID: "d1", APIKey: azureKey}
	long := strings.Repeat("y", 400)
	tests := []struct {
		name       string
		status     int
		header     http.Header
		body       string
		kind       apierr.Kind
		httpStatus int           // what the client would see
		retryAfter time.Duration // exact
		msg        string
	}{
		{name: "openai context_length_exceeded", status: 400, body: `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, kind: apierr.ContextWindowExceeded, httpStatus: 400, msg: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. (deployment d1 returned 400)"},
		{name: "code alone decides context length", status: 400, body: `{"error":{"message":"too long","code":"context_length_exceeded"}}`, kind: apierr.ContextWindowExceeded, httpStatus: 400, msg: "too long (deployment d1 returned 400)"},
		{name: "vllm maximum context length message, top-level message", status: 400, body: `{"object":"error","message":"This model's Maximum Context Length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`, kind: apierr.ContextWindowExceeded, httpStatus: 400, msg: "This model's Maximum Context Length is 4096 tokens. However, you requested 5000 tokens. (deployment d1 returned 400)"},
		{name: "prompt is too long", status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, kind: apierr.ContextWindowExceeded, httpStatus: 400, msg: "prompt is too long: 210000 tokens > 200000 maximum (deployment d1 returned 400)"},
		{name: "a 429 whose message says too many tokens is a rate limit", status: 429, header: http.Header{"Retry-After": {"3"}}, body: `{"error":{"message":"Tokens per minute limit exceeded - too many tokens processed.","type":"x"}}`, kind: apierr.UpstreamRateLimited, httpStatus: 429, retryAfter: 3 * time.Second, msg: "Tokens per minute limit exceeded - too many tokens processed. (deployment d1 returned 429)"},
		{name: "context length beats a 5xx status", status: 500, body: `{"error":{"message":"input exceeds the context window of this model"}}`, kind: apierr.ContextWindowExceeded, httpStatus: 400, msg: "input exceeds the context window of this model (deployment d1 returned 500)"},
		{name: "azure content_filter with innererror", status: 400, body: `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,` + `"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}}}`, kind: apierr.ContentPolicy, httpStatus: 400, msg: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. (deployment d1 returned 400)"},
		{name: "innererror ResponsibleAIPolicyViolation alone", status: 400, body: `{"error":{"message":"blocked","innererror":{"code":"ResponsibleAIPolicyViolation"}}}`, kind: apierr.ContentPolicy, httpStatus: 400, msg: "blocked (deployment d1 returned 400)"},
		{name: "innererror ResponsibleAIPolicyViolation under another code", status: 400, body: `{"error":{"message":"blocked","code":"invalid_prompt","innererror":{"code":"ResponsibleAIPolicyViolation"}}}`, kind: apierr.ContentPolicy, httpStatus: 400, msg: "blocked (deployment d1 returned 400)"},
		{name: "openai content_policy_violation", status: 400, body: `{"error":{"message":"Your request was rejected as a result of our safety system.","type":"invalid_request_error","code":"content_policy_violation"}}`, kind: apierr.ContentPolicy, httpStatus: 400, msg: "Your request was rejected as a result of our safety system. (deployment d1 returned 400)"},
		{name: "429 with Retry-After seconds", status: 429, header: http.Header{"Retry-After": {"7"}}, body: `{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM)","type":"tokens","code":"rate_limit_exceeded"}}`, kind: apierr.UpstreamRateLimited, httpStatus: 429, retryAfter: 7 * time.Second, msg: "Rate limit reached for gpt-4o on tokens per min (TPM) (deployment d1 returned 429)"},
		{name: "429 retry-after-ms wins over Retry-After", status: 429, header: http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"7"}}, kind: apierr.UpstreamRateLimited, httpStatus: 429, retryAfter: 1500 * time.Millisecond, msg: "Too Many Requests (deployment d1 returned 429)"},
		{name: "429 without a hint", status: 429, body: `{"error":{"message":"slow down"}}`, kind: apierr.UpstreamRateLimited, httpStatus: 429, msg: "slow down (deployment d1 returned 429)"},
		{name: "429 with an unparseable Retry-After", status: 429, header: http.Header{"Retry-After": {"soon"}}, kind: apierr.UpstreamRateLimited, httpStatus: 429, msg: "Too Many Requests (deployment d1 returned 429)"},
		{name: "408", status: 408, kind: apierr.UpstreamTimeout, httpStatus: 504, msg: "Request Timeout (deployment d1 returned 408)"},
		{name: "504", status: 504, body: "upstream request timeout", kind: apierr.UpstreamTimeout, httpStatus: 504, msg: "upstream request timeout (deployment d1 returned 504)"},
		{name: "401 with a key in the message", status: 401, body: `{"error":{"message":"Incorrect API key provided: sk-proj-AbCdEf123456****wxyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`, kind: apierr.UpstreamAuth, httpStatus: 502, msg: "Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys. (deployment d1 returned 401)"},
		{name: "403 echoing the deployment's own key", status: 403, body: `{"error":{"message":"key ` + azureKey + ` is not allowed"}}`, kind: apierr.UpstreamAuth, httpStatus: 502, msg: "key [redacted] is not allowed (deployment d1 returned 403)"},
		{name: "404", status: 404, body: `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`, kind: apierr.UpstreamNotFound, httpStatus: 502, msg: "The API deployment for this resource does not exist. (deployment d1 returned 404)"},
		{name: "500", status: 500, body: `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`, kind: apierr.UpstreamServer, httpStatus: 502, msg: "The server had an error while processing your request. (deployment d1 returned 500)"},
		{name: "502 html body", status: 502, body: "<html><body>Bad gateway</body></html>\n", kind: apierr.UpstreamServer, httpStatus: 502, msg: "<html><body>Bad gateway</body></html> (deployment d1 returned 502)"},
		{name: "503 keeps its status and Retry-After", status: 503, header: http.Header{"Retry-After": {"30"}}, body: `{"error":{"message":"overloaded"}}`, kind: apierr.UpstreamServer, httpStatus: 503, retryAfter: 30 * time.Second, msg: "overloaded (deployment d1 returned 503)"},
		{name: "599", status: 599, kind: apierr.UpstreamServer, httpStatus: 502, msg: "upstream error (deployment d1 returned 599)"},
		{name: "400", status: 400, body: `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`, kind: apierr.UpstreamBadRequest, httpStatus: 400, msg: "Invalid value for 'temperature' (deployment d1 returned 400)"},
		{name: "422 fastapi detail", status: 422, body: `{"detail":"field required"}`, kind: apierr.UpstreamBadRequest, httpStatus: 400, msg: "field required (deployment d1 returned 422)"},
		{name: "409", status: 409, kind: apierr.UpstreamBadRequest, httpStatus: 400, msg: "Conflict (deployment d1 returned 409)"},
		{name: "error.message preferred over message", status: 400, body: `{"message":"outer","error":{"message":"inner"}}`, kind: apierr.UpstreamBadRequest, httpStatus: 400, msg: "inner (deployment d1 returned 400)"},
		{name: "JSON body with surrounding whitespace", status: 400, body: "\n\t {\"error\":{\"message\":\"spaced\"}} \r\n", kind: apierr.UpstreamBadRequest, httpStatus: 400, msg: "spaced (deployment d1 returned 400)"},
		{name: "long text body truncated to 300 bytes", status: 500, body: long, kind: apierr.UpstreamServer, httpStatus: 502, msg: long[:300] + "... (deployment d1 returned 500)"},
		{name: "empty body", status: 400, kind: apierr.UpstreamBadRequest, httpStatus: 400, msg: "Bad Request (deployment d1 returned 400)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header
			if h == nil {
				h = http.Header{}
			}
			e := Classify(d, tt.status, h, []byte(tt.body))
			if e.Kind != tt.kind {
				t.Errorf("Kind = %v, want %v", e.Kind, tt.kind)
			}
			if got := e.HTTPStatus(); got != tt.httpStatus {
				t.Errorf("HTTPStatus() = %d, want %d", got, tt.httpStatus)
			}
			if e.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.retryAfter)
			}
			if e.Message != tt.msg {
				t.Errorf("Message = %q\n           want %q", e.Message, tt.msg)
			}
			if strings.Contains(e.Message, azureKey) {
				t.Errorf("Message leaks the deployment key: %q", e.Message)
			}
		})
	}
}

func TestPlainStringError(t *testing.T) {
	e := Classify(&config.Deployment{ID: "d1"}, 404, nil, []byte(`{"error":"model 'llama3' not found, try pulling it first"}`))
	if e.Message != "model 'llama3' not found, try pulling it first (deployment d1 returned 404)" {
		t.Fatalf("Message = %q", e.Message)
	}
}

// A 404 is the deployment's own fault only when it says the model the
// deployment names is missing; a route the request chose (or a wildcard
// deployment's model, which is the request's) is the request's own
// (apierr.Error.Own: the router never cools the deployment for it).
func TestClassifyNotFoundOwner(t *testing.T) {
	fixed, wildcard := &config.Deployment{ID: "d1", Model: "gpt-4o"}, &config.Deployment{ID: "d2", Model: "*"}
	for _, tc := range []struct {
		name string
		d    *config.Deployment
		body string
		own  bool
	}{
		{"azure deployment missing", fixed, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`, false},
		{"openai model_not_found", fixed, `{"error":{"message":"The model ` + "`gpt-5x`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}`, false},
		{"vllm model missing", fixed, `{"object":"error","message":"The model ` + "`llama`" + ` does not exist.","type":"NotFoundError","code":404}`, false},
		{"ollama model missing", fixed, `{"error":"model 'llama3' not found, try pulling it first"}`, false},
		{"anthropic model missing", fixed, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`, false},
		{"fastapi route missing (vLLM without /v1/responses)", fixed, `{"detail":"Not Found"}`, true},
		{"openai route missing", fixed, `{"error":{"message":"Invalid URL (POST /v1/responses)","type":"invalid_request_error","param":null,"code":null}}`, true},
		{"not a chat model", fixed, `{"error":{"message":"This is not a chat model and thus not supported in the v1/chat/completions endpoint. Did you mean to use v1/completions?","type":"invalid_request_error","param":"model","code":null}}`, true},
		{"anthropic route missing", fixed, `{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}`, true},
		{"plain text", fixed, "404 page not found", true},
		{"empty", fixed, "", true},
		{"a wildcard deployment's model is the request's", wildcard, `{"error":{"message":"The model ` + "`gpt-5x`" + ` does not exist","code":"model_not_found"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := Classify(tc.d, http.StatusNotFound, http.Header{}, []byte(tc.body))
			if e.Kind != apierr.UpstreamNotFound || e.Own != tc.own {
				t.Fatalf("Kind %v Own %v, want %v Own %v", e.Kind, e.Own, apierr.UpstreamNotFound, tc.own)
			}
		})
	}
	// Other statuses are never marked: their class decides.
	for _, status := range []int{400, 401, 408, 429, 500} {
		if e := Classify(fixed, status, http.Header{}, []byte(`{"detail":"Not Found"}`)); e.Own {
			t.Errorf("%d marked as the request's own", status)
		}
	}
}
