package apierr

import (
	"net/http/httptest"
	"testing"
	"time"
)

// Every kind has an Anthropic type and status, and Anthropic's body shape.
func TestAnthropic(t *testing.T) {
	want := map[Kind]struct {
		typ    string
		status int
	}{
		Internal:              {"api_error", 500},
		InvalidRequest:        {"invalid_request_error", 400},
		Unauthorized:          {"authentication_error", 401},
		Forbidden:             {"permission_error", 403},
		ModelNotFound:         {"not_found_error", 404},
		NotFound:              {"not_found_error", 404},
		MethodNotAllowed:      {"invalid_request_error", 405},
		TooLarge:              {"request_too_large", 413},
		NotImplemented:        {"api_error", 501},
		RateLimited:           {"rate_limit_error", 429},
		BudgetExceeded:        {"billing_error", 400},
		UpstreamRateLimited:   {"rate_limit_error", 429},
		UpstreamTimeout:       {"timeout_error", 504},
		UpstreamConnection:    {"api_error", 502},
		UpstreamServer:        {"api_error", 502},
		UpstreamBadRequest:    {"invalid_request_error", 400},
		UpstreamAuth:          {"api_error", 502},
		UpstreamNotFound:      {"api_error", 502},
		ContextWindowExceeded: {"invalid_request_error", 400},
		ContentPolicy:         {"invalid_request_error", 400},
		StreamBroken:          {"api_error", 502},
		Unavailable:           {"overloaded_error", 529},
		Conflict:              {"invalid_request_error", 409},
	}
	if len(want) != int(kindCount) {
		t.Fatalf("the table covers %d kinds, the package has %d", len(want), kindCount)
	}
	for k, w := range want {
		if typ, status := Anthropic(&Error{Kind: k}); typ != w.typ || status != w.status {
			t.Errorf("%v: %s %d, want %s %d", k, typ, status, w.typ, w.status)
		}
	}
	// An overloaded provider (classified as a 503) is Anthropic's 529.
	if typ, status := Anthropic(&Error{Kind: UpstreamServer, Status: 503}); typ != "overloaded_error" || status != 529 {
		t.Errorf("overloaded provider: %s %d", typ, status)
	}
	rec := httptest.NewRecorder()
	WriteAnthropic(rec, &Error{Kind: UpstreamRateLimited, Message: "slow down", RetryAfter: 1500 * time.Millisecond})
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "2" ||
		rec.Body.String() != `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}` {
		t.Errorf("WriteAnthropic: %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	rec = httptest.NewRecorder()
	WriteAnthropic(rec, &Error{Kind: Unavailable, Message: "busy"})
	if rec.Code != 529 || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("overloaded: %d retry-after %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	if got := string(AnthropicSSE(&Error{Kind: StreamBroken, Message: "cut"})); got != "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"cut\"}}\n\n" {
		t.Errorf("AnthropicSSE: %q", got)
	}
}
