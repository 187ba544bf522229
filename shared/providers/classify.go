package providers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

const maxErrorBody = 64 << 10

// ErrNoRoute is the cause of an upstream failure that says the server does
// not serve the route the call took (a 404 that does not name the model, a
// 405): an OpenAI-compatible server without /v1/responses, for instance.
// Such a failure is the request's own (it chose the route), never the
// deployment's.
var ErrNoRoute = errors.New("the server does not serve this route")

// StatusError classifies a non-2xx upstream response, reading at most 64 KiB
// of its body. It recognises the providers' real signals (their ErrorWords:
// OpenAI's context_length_exceeded, Azure's content_filter, ...), status
// codes and Retry-After.
func StatusError(d *config.Deployment, resp *http.Response) *apierr.Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return Classify(d, resp.StatusCode, resp.Header, body)
}

// Classify maps an upstream status, headers and body to an *apierr.Error.
func Classify(d *config.Deployment, status int, h http.Header, body []byte) *apierr.Error {
	msg, code, typ := errorFields(body)
	msg = Redact(msg, d) // before any cut, so no part of a key survives
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	lower := strings.ToLower(msg + " " + code + " " + typ)
	e := &apierr.Error{}
	switch {
	case status == http.StatusTooManyRequests:
		// Before the texts: a rate limit's message may well say "too many
		// tokens" (a tokens-per-minute limit), and it is still a rate limit,
		// retried elsewhere and cooled, never a context-window error.
		e.Kind = apierr.UpstreamRateLimited
		e.RetryAfter = RetryAfter(h, time.Now())
	case words.ContextWindow.Match(status, code, typ, lower):
		e.Kind = apierr.ContextWindowExceeded
	case words.ContentPolicy.Match(status, code, typ, lower):
		e.Kind = apierr.ContentPolicy
	case words.Overloaded.Match(status, code, typ, lower): // retry elsewhere
		e.Kind = apierr.UpstreamServer
		e.Status = http.StatusServiceUnavailable
		e.RetryAfter = RetryAfter(h, time.Now())
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		e.Kind = apierr.UpstreamTimeout
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = apierr.UpstreamAuth
	case status == http.StatusNotFound:
		// The deployment's own fault only when it says the model the
		// deployment names is missing: any other 404 is a route the
		// request chose (a server without /v1/responses), and on a
		// wildcard deployment the model is the request's too.
		e.Kind = apierr.UpstreamNotFound
		missing := words.ModelMissing.Match(status, code, typ, lower)
		e.Own = d.Model == "*" || !missing
		if !missing {
			e.Cause = ErrNoRoute
		}
	case status == http.StatusMethodNotAllowed: // the path serves other methods only
		e.Kind, e.Cause = apierr.UpstreamBadRequest, ErrNoRoute
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
	if msg == "" {
		msg = "upstream error"
	}
	e.Message = fmt.Sprintf("%s (deployment %s returned %d)", msg, d.ID, status)
	return e
}

func errorFields(body []byte) (msg, code, typ string) {
	body = bytes.TrimSpace(body)
	if !gjson.ValidBytes(body) {
		return string(body), "", ""
	}
	r := gjson.GetManyBytes(body, "error.message", "error.code", "error.type", "error.innererror.code", "message", "detail", "error")
	msg = r[0].String()
	if msg == "" && r[6].Type == gjson.String { // {"error":"..."} (Ollama, vLLM)
		msg = r[6].Str
	}
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
