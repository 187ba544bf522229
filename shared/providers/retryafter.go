package providers

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// RetryAfter reads retry-after-ms, then Retry-After (seconds or HTTP date).
// Hints beyond a day are capped there (and then refused by the router's
// max_retry_after); non-numbers and non-positive values mean no hint.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			if d := capHint(ms * float64(time.Millisecond)); d > 0 {
				return d
			}
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return capHint(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return capHint(float64(t.Sub(now)))
	}
	return 0
}

const maxHint = 24 * time.Hour

func capHint(ns float64) time.Duration {
	switch {
	case math.IsNaN(ns) || ns <= 0:
		return 0
	case ns >= float64(maxHint):
		return maxHint
	}
	return time.Duration(ns)
}
