package apierr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"testing"
	"time"
)

func TestKinds(t *testing.T) {
	tests := []struct {
		kind         Kind
		typ          string
		status       int
		code, String string
	}{
		{Internal, "server_error", 500, "internal_error", "internal_error"},
		{InvalidRequest, "invalid_request_error", 400, "invalid_request", "invalid_request"},
		{Unauthorized, "authentication_error", 401, "invalid_api_key", "invalid_api_key"},
		{Forbidden, "permission_error", 403, "model_not_allowed", "model_not_allowed"},
		{ModelNotFound, "invalid_request_error", 404, "model_not_found", "model_not_found"},
		{NotFound, "invalid_request_error", 404, "not_found", "not_found"},
		{MethodNotAllowed, "invalid_request_error", 405, "method_not_allowed", "method_not_allowed"},
		{TooLarge, "invalid_request_error", 413, "request_too_large", "request_too_large"},
		{NotImplemented, "invalid_request_error", 501, "not_implemented", "not_implemented"},
		{RateLimited, "rate_limit_error", 429, "rate_limit_exceeded", "rate_limit_exceeded"},
		{BudgetExceeded, "budget_exceeded", 400, "budget_exceeded", "budget_exceeded"},
		{UpstreamRateLimited, "rate_limit_error", 429, "upstream_rate_limited", "rate_limited"},
		{UpstreamTimeout, "timeout_error", 504, "upstream_timeout", "timeout"},
		{UpstreamConnection, "api_connection_error", 502, "upstream_connection_error", "connection_error"},
		{UpstreamServer, "api_error", 502, "upstream_server_error", "server_error"},
		{UpstreamBadRequest, "invalid_request_error", 400, "upstream_bad_request", "bad_request"},
		{UpstreamAuth, "api_error", 502, "upstream_auth_error", "auth"},
		{UpstreamNotFound, "api_error", 502, "upstream_not_found", "not_found"},
		{ContextWindowExceeded, "invalid_request_error", 400, "context_length_exceeded", "context_window_exceeded"},
		{ContentPolicy, "invalid_request_error", 400, "content_policy_violation", "content_policy"},
		{StreamBroken, "api_error", 502, "stream_broken", "stream_broken"},
		{Unavailable, "api_error", 503, "service_unavailable", "service_unavailable"},
		{Conflict, "invalid_request_error", 409, "conflict", "conflict"},
	}
	if len(tests) != int(kindCount) {
		t.Fatalf("the table covers %d kinds, the package has %d", len(tests), kindCount)
	}
	for i, tt := range tests {
		t.Run(tt.String, func(t *testing.T) {
			if tt.kind != Kind(i) {
				t.Fatalf("row %d is kind %d", i, tt.kind)
			}
			if got := tt.kind.Status(); got != tt.status {
				t.Errorf("Status() = %d, want %d", got, tt.status)
			}
			if got := tt.kind.String(); got != tt.String {
				t.Errorf("String() = %q, want %q", got, tt.String)
			}
			want := fmt.Sprintf(`{"error":{"message":"m","type":%q,"param":null,"code":%q}}`, tt.typ, tt.code)
			if got := string(JSON(&Error{Kind: tt.kind, Message: "m"})); got != want {
				t.Errorf("JSON = %s, want %s", got, want)
			}
		})
	}
	t.Run("unknown kind", func(t *testing.T) {
		k := kindCount + 3
		if k.String() != "unknown" || k.Status() != 500 {
			t.Errorf("String() %q Status() %d, want unknown 500", k.String(), k.Status())
		}
		want := `{"error":{"message":"m","type":"server_error","param":null,"code":"internal_error"}}`
		if got := string(JSON(&Error{Kind: k, Message: "m"})); got != want {
			t.Errorf("JSON = %s, want %s", got, want)
		}
		if got := (&Error{Kind: k}).HTTPStatus(); got != 500 {
			t.Errorf("HTTPStatus() = %d, want 500", got)
		}
	})
}

// bodyCase is an error and the body it is written as.
type bodyCase struct {
	name string
	err  error
	want string
}

func TestJSON(t *testing.T) {
	tests := []bodyCase{
		{
			"param null when empty",
			New(InvalidRequest, "missing %s", "model"),
			`{"error":{"message":"missing model","type":"invalid_request_error","param":null,"code":"invalid_request"}}`,
		},
		{
			"param and code set",
			&Error{Kind: InvalidRequest, Message: "bad", Param: "temperature", Code: "invalid_value"},
			`{"error":{"message":"bad","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`,
		},
		{
			"status override does not change the body",
			&Error{Kind: UpstreamServer, Message: "busy", Status: 503},
			`{"error":{"message":"busy","type":"api_error","param":null,"code":"upstream_server_error"}}`,
		},
		{
			"message escaped",
			&Error{Kind: InvalidRequest, Message: "say \"hi\"\n\\ é <b>"},
			`{"error":{"message":"say \"hi\"\n\\ é \u003cb\u003e","type":"invalid_request_error","param":null,"code":"invalid_request"}}`,
		},
		{
			"wrapped error found",
			fmt.Errorf("route: %w", New(ModelNotFound, "no model x")),
			`{"error":{"message":"no model x","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
		},
		{
			"foreign error hidden",
			errors.New("dynamodb: secret table name"),
			`{"error":{"message":"internal error","type":"server_error","param":null,"code":"internal_error"}}`,
		},
		{
			"cause hidden",
			&Error{Kind: UpstreamConnection, Message: "could not reach d1", Cause: errors.New("dial 10.0.0.1:443")},
			`{"error":{"message":"could not reach d1","type":"api_connection_error","param":null,"code":"upstream_connection_error"}}`,
		},
		{
			"nil error",
			nil,
			`{"error":{"message":"internal error","type":"server_error","param":null,"code":"internal_error"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := JSON(tt.err)
			if string(got) != tt.want {
				t.Errorf("JSON =\n %s\nwant\n %s", got, tt.want)
			}
			var v struct {
				Error map[string]any `json:"error"`
			}
			if err := json.Unmarshal(got, &v); err != nil || len(v.Error) != 4 {
				t.Errorf("body does not decode to the four OpenAI fields: %v %v", v, err)
			}
		})
	}
}

func TestErrorMethods(t *testing.T) {
	cause := errors.New("connection reset")
	tests := []struct {
		name   string
		err    *Error
		text   string
		status int
		unwrap error
	}{
		{"plain", New(RateLimited, "key over %d rpm", 10), "rate_limit_exceeded: key over 10 rpm", 429, nil},
		{"with cause", &Error{Kind: UpstreamConnection, Message: "could not reach d1", Cause: cause}, "connection_error: could not reach d1: connection reset", 502, cause},
		{"status override", &Error{Kind: UpstreamServer, Message: "busy", Status: 503}, "server_error: busy", 503, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.text {
				t.Errorf("Error() = %q, want %q", got, tt.text)
			}
			if got := tt.err.HTTPStatus(); got != tt.status {
				t.Errorf("HTTPStatus() = %d, want %d", got, tt.status)
			}
			if got := tt.err.Unwrap(); got != tt.unwrap {
				t.Errorf("Unwrap() = %v, want %v", got, tt.unwrap)
			}
		})
	}
	if !errors.Is(fmt.Errorf("x: %w", tests[1].err), cause) {
		t.Error("errors.Is does not reach the cause")
	}
}

func TestFromAndKindOf(t *testing.T) {
	own := New(BudgetExceeded, "over budget")
	foreign := errors.New("boom")
	if From(own) != own || From(fmt.Errorf("a: %w", fmt.Errorf("b: %w", own))) != own {
		t.Error("From does not return the wrapped *Error itself")
	}
	e := From(foreign)
	if e.Kind != Internal || e.Message != "internal error" || e.Cause != foreign {
		t.Errorf("From(foreign) = %+v", e)
	}
	if k := KindOf(fmt.Errorf("x: %w", own)); k != BudgetExceeded {
		t.Errorf("KindOf = %v, want %v", k, BudgetExceeded)
	}
	if k := KindOf(foreign); k != Internal {
		t.Errorf("KindOf(foreign) = %v, want %v", k, Internal)
	}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		retryAfter string // "" means no header
	}{
		{"bad request", New(InvalidRequest, "x"), 400, ""},
		{"429 without a hint gets 1", New(RateLimited, "x"), 429, "1"},
		{"429 with a negative hint gets 1", &Error{Kind: UpstreamRateLimited, RetryAfter: -5 * time.Second}, 429, "1"},
		{"429 by status override gets 1", &Error{Kind: InvalidRequest, Status: 429}, 429, "1"},
		{"whole seconds", &Error{Kind: RateLimited, RetryAfter: 20 * time.Second}, 429, "20"},
		{"rounded up from 1ns", &Error{Kind: RateLimited, RetryAfter: time.Nanosecond}, 429, "1"},
		{"rounded up from 1.5s", &Error{Kind: RateLimited, RetryAfter: 1500 * time.Millisecond}, 429, "2"},
		{"rounded up from 59.001s", &Error{Kind: UpstreamRateLimited, RetryAfter: 59*time.Second + time.Millisecond}, 429, "60"},
		{"exactly 1s", &Error{Kind: RateLimited, RetryAfter: time.Second}, 429, "1"},
		{"largest duration", &Error{Kind: UpstreamRateLimited, RetryAfter: math.MaxInt64}, 429, "9223372037"},
		{"503 keeps its status and hint", &Error{Kind: UpstreamServer, Status: 503, RetryAfter: 30 * time.Second}, 503, "30"},
		{"503 without hint", &Error{Kind: UpstreamServer, Status: 503}, 503, ""},
		{"hint on another status", &Error{Kind: Unavailable, RetryAfter: 2500 * time.Millisecond}, 503, "3"},
		{"foreign error", errors.New("boom"), 500, ""},
		{"wrapped", fmt.Errorf("x: %w", New(Unauthorized, "no key")), 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Write(rec, tt.err)
			res := rec.Result()
			if res.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", res.StatusCode, tt.status)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			ra, has := res.Header["Retry-After"]
			switch {
			case tt.retryAfter == "" && has:
				t.Errorf("Retry-After = %q, want none", ra)
			case tt.retryAfter != "" && (len(ra) != 1 || ra[0] != tt.retryAfter):
				t.Errorf("Retry-After = %q, want %q", ra, tt.retryAfter)
			}
			if got, want := rec.Body.Bytes(), JSON(tt.err); !bytes.Equal(got, want) {
				t.Errorf("body = %s, want %s", got, want)
			}
		})
	}
}

func TestWriteReplacesRetryAfter(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Retry-After", "99")
	Write(rec, &Error{Kind: RateLimited, RetryAfter: 3 * time.Second})
	if got := rec.Result().Header.Values("Retry-After"); len(got) != 1 || got[0] != "3" {
		t.Errorf("Retry-After = %q, want [3]", got)
	}
}

func TestSSE(t *testing.T) {
	tests := []bodyCase{
		{
			"stream broken",
			&Error{Kind: StreamBroken, Message: "upstream closed"},
			"data: {\"error\":{\"message\":\"upstream closed\",\"type\":\"api_error\",\"param\":null,\"code\":\"stream_broken\"}}\n\n",
		},
		{
			"newline in message stays inside one event",
			&Error{Kind: UpstreamServer, Message: "line1\n\nline2"},
			"data: {\"error\":{\"message\":\"line1\\n\\nline2\",\"type\":\"api_error\",\"param\":null,\"code\":\"upstream_server_error\"}}\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SSE(tt.err)
			if string(got) != tt.want {
				t.Errorf("SSE = %q, want %q", got, tt.want)
			}
			if bytes.Count(got, []byte("\n")) != 2 {
				t.Errorf("SSE is not a single event: %q", got)
			}
		})
	}
}

// A store package's sentinel is in its class, wrapped or not, and Store
// maps it as the class with no mapping of the package's own.
func TestClassed(t *testing.T) {
	unavailable := Classed(ErrUnavailable, "spend store unavailable")
	invalid := Classed(ErrInvalid, "bad spend query")
	tests := []struct {
		err   error
		class error
		kind  Kind
	}{
		{unavailable, ErrUnavailable, Unavailable},
		{fmt.Errorf("read logs: %w: %w", unavailable, errors.New("timeout")), ErrUnavailable, Unavailable},
		{fmt.Errorf("%w: 400 days", invalid), ErrInvalid, InvalidRequest},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.class) {
			t.Errorf("%v: not in its class %v", tt.err, tt.class)
		}
		for _, other := range []error{ErrNotFound, ErrExists, ErrConflict} {
			if errors.Is(tt.err, other) {
				t.Errorf("%v: is %v too", tt.err, other)
			}
		}
		if got := Store(tt.err).Kind; got != tt.kind {
			t.Errorf("Store(%v).Kind = %v, want %v", tt.err, got, tt.kind)
		}
	}
	if got := Store(fmt.Errorf("%w: 400 days", invalid)).Message; got != "bad spend query: 400 days" {
		t.Errorf("message %q: want the store's message", got)
	}
}
