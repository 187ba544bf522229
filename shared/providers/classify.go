package providers

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

const maxErrorBody = 64 << 10

// StatusError classifies a non-2xx upstream response, reading at most 64 KiB
// of its body. It recognises the providers' real signals: OpenAI's
// context_length_exceeded, Azure's content_filter, status codes, Retry-After.
func StatusError(d *config.Deployment, resp *http.Response) *apierr.Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return Classify(d, resp.StatusCode, resp.Header, body)
}

// Classify maps an upstream status, headers and body to an *apierr.Error.
func Classify(d *config.Deployment, status int, h http.Header, body []byte) *apierr.Error {
	msg, code, typ := errorFields(body)
	lower := strings.ToLower(msg + " " + code + " " + typ)
	e := &apierr.Error{}
	switch {
	case code == "context_length_exceeded" || strings.Contains(lower, "maximum context length") ||
		strings.Contains(lower, "context_length_exceeded") || strings.Contains(lower, "context window") ||
		strings.Contains(lower, "too many tokens") || strings.Contains(lower, "prompt is too long"):
		e.Kind = apierr.ContextWindowExceeded
	case code == "content_filter" || code == "content_policy_violation" ||
		strings.Contains(lower, "content_filter") || strings.Contains(lower, "responsibleaipolicyviolation") ||
		strings.Contains(lower, "content management policy") || strings.Contains(lower, "content policy"):
		e.Kind = apierr.ContentPolicy
	case status == http.StatusTooManyRequests:
		e.Kind = apierr.UpstreamRateLimited
		e.RetryAfter = RetryAfter(h, time.Now())
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		e.Kind = apierr.UpstreamTimeout
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = apierr.UpstreamAuth
	case status == http.StatusNotFound:
		e.Kind = apierr.UpstreamNotFound
	case status >= 500:
		e.Kind = apierr.UpstreamServer
		if status == http.StatusServiceUnavailable {
			e.Status = status
			e.RetryAfter = RetryAfter(h, time.Now())
		}
	default: // 400, 409, 422 and other caller-side statuses
		e.Kind = apierr.UpstreamBadRequest
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	e.Message = fmt.Sprintf("%s (deployment %s returned %d)", Redact(msg, d), d.ID, status)
	return e
}

func errorFields(body []byte) (msg, code, typ string) {
	body = bytes.TrimSpace(body)
	if !gjson.ValidBytes(body) {
		if len(body) > 300 {
			body = body[:300]
		}
		return string(body), "", ""
	}
	r := gjson.GetManyBytes(body, "error.message", "error.code", "error.type", "error.innererror.code", "message", "detail")
	msg = r[0].String()
	if msg == "" {
		msg = r[4].String()
	}
	if msg == "" {
		msg = r[5].String()
	}
	code = r[1].String()
	if inner := r[3].String(); inner != "" && code == "" {
		code = inner
	} else if inner == "ResponsibleAIPolicyViolation" {
		code = "content_filter"
	}
	return msg, code, r[2].String()
}

var keyLike = regexp.MustCompile(`\b(sk|pk|rk)-[A-Za-z0-9_\-*]{6,}`)

// Redact removes anything that looks like an API key from a provider message.
func Redact(msg string, d *config.Deployment) string {
	if d != nil && len(d.APIKey) >= 4 {
		msg = strings.ReplaceAll(msg, d.APIKey, "[redacted]")
	}
	return keyLike.ReplaceAllString(msg, "[redacted]")
}

// RetryAfter reads retry-after-ms, then Retry-After (seconds or HTTP date).
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
