package gemini

import (
	"bytes"
	"io"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/catalog"
	"github.com/sluice-gw/sluice/shared/providers/chunks"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Errors are Gemini's words for what its statuses do not say: a prompt over
// the context window is a 400 INVALID_ARGUMENT like any other ("The input
// token count (N) exceeds the maximum number of tokens allowed (M)"), a
// blocked prompt is answered as content_policy_violation (Blocked), and a
// model that does not exist is a 404 "models/x is not found for API version
// v1beta". (A 429 RESOURCE_EXHAUSTED is a rate limit by its status.)
var Errors = catalog.ErrorWords{
	ContextWindow: catalog.Signal{Phrases: []string{"exceeds the maximum number of tokens", "input token count"}},
	ContentPolicy: catalog.Signal{Phrases: []string{"gemini blocked the request"}},
	Overloaded:    catalog.Signal{Phrases: []string{"the model is overloaded"}},
	ModelMissing:  catalog.Signal{Phrases: []string{"is not found for api version", "is not supported for generatecontent"}},
}

const maxErrorBody = 64 << 10

// ErrorResponse turns a non-2xx Gemini response into one with an
// OpenAI-shaped error body ({"error":{"message","type","code"}}: type is
// Google's status, such as RESOURCE_EXHAUSTED, code its reason when it gives
// one), for providers.Classify. An invalid API key, which Google answers
// with 400 (API_KEY_INVALID), becomes a 401. A body that is not Google's
// error is kept as it is.
func ErrorResponse(resp *http.Response) *http.Response {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	raw = bytes.TrimSpace(raw)
	e := gjson.GetBytes(raw, "error")
	if !e.IsObject() {
		e = gjson.GetBytes(raw, "0.error") // a JSON array of responses
	}
	if !e.IsObject() {
		return chunks.Replace(resp, resp.Header.Get("Content-Type"), raw)
	}
	status := resp.StatusCode
	if reason(e) == "API_KEY_INVALID" {
		status = http.StatusUnauthorized
	}
	return chunks.Replace(resp, "application/json", openAIError(e), status)
}

// reason is the ErrorInfo reason of a Google error ("API_KEY_INVALID",
// "RATE_LIMIT_EXCEEDED"), or "".
func reason(e gjson.Result) string {
	var out string
	e.Get("details").ForEach(func(_, d gjson.Result) bool {
		out = d.Get("reason").String()
		return out == ""
	})
	return out
}

// openAIError is a Google error object ({"code","message","status"}) in
// OpenAI's shape.
func openAIError(e gjson.Result) []byte {
	typ := e.Get("status").String()
	if typ == "" {
		typ = "api_error"
	}
	code := reason(e)
	if code == "" {
		code = typ
	}
	out := append([]byte(nil), `{"error":{"message":`...)
	out = wire.AppendString(out, e.Get("message").String())
	out = append(out, `,"type":`...)
	out = wire.AppendString(out, typ)
	out = append(out, `,"param":null,"code":`...)
	out = wire.AppendString(out, code)
	return append(out, "}}"...)
}

// errorStatus is the HTTP status of a Google error object (an error event
// inside a 200 stream): its code, else the one its status stands for.
func errorStatus(e gjson.Result) int {
	if reason(e) == "API_KEY_INVALID" {
		return http.StatusUnauthorized
	}
	if c := e.Get("code").Int(); c >= 400 && c <= 599 {
		return int(c)
	}
	switch e.Get("status").String() {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return http.StatusBadRequest
	case "UNAUTHENTICATED":
		return http.StatusUnauthorized
	case "PERMISSION_DENIED":
		return http.StatusForbidden
	case "NOT_FOUND":
		return http.StatusNotFound
	case "RESOURCE_EXHAUSTED":
		return http.StatusTooManyRequests
	case "UNAVAILABLE":
		return http.StatusServiceUnavailable
	case "DEADLINE_EXCEEDED":
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}
