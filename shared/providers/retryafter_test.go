package providers

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"zero", http.Header{"Retry-After": {"0"}}, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"garbage", http.Header{"Retry-After": {"later"}}, 0},
		{"http date ahead", http.Header{"Retry-After": {date(90 * time.Second)}}, 90 * time.Second},
		{"http date passed", http.Header{"Retry-After": {date(-90 * time.Second)}}, 0},
		{"http date now", http.Header{"Retry-After": {date(0)}}, 0},
		{"rfc850 date ahead", http.Header{"Retry-After": {now.Add(2 * time.Minute).Format(time.RFC850)}}, 2 * time.Minute},
		{"milliseconds", http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"fractional milliseconds", http.Header{"Retry-After-Ms": {"0.5"}}, 500 * time.Microsecond},
		{"milliseconds win", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{"zero milliseconds fall back", http.Header{"Retry-After-Ms": {"0"}, "Retry-After": {"2"}}, 2 * time.Second},
		{"bad milliseconds fall back", http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"2"}}, 2 * time.Second},
		{"negative milliseconds fall back", http.Header{"Retry-After-Ms": {"-1"}, "Retry-After": {"3"}}, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RetryAfter(tt.h, now); got != tt.want {
				t.Errorf("RetryAfter(%v) = %v, want %v", tt.h, got, tt.want)
			}
		})
	}
}

func TestRetryAfterHuge(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, v := range []string{"inf", "1e20", "9223372036"} {
		h := http.Header{"Retry-After": {v}}
		if got := RetryAfter(h, now); got != 24*time.Hour {
			t.Errorf("Retry-After %s = %v, want the 24h cap", v, got)
		}
	}
	if got := RetryAfter(http.Header{"Retry-After": {"NaN"}}, now); got != 0 {
		t.Errorf("NaN = %v", got)
	}
}
