package stack_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// --- function URL events

// urlEvent is a function URL request (payload 2.0) made from a file of
// events/, with the path, query, key and body the step needs.
func urlEvent(t *testing.T, file, method, path, query, bearer string, body any) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", file))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("events/%s: %v", file, err)
	}
	ev.RawPath, ev.RequestContext.HTTP.Path = path, path
	ev.RawQueryString = query
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.RequestID = "stack-" + randomHex(8)
	ev.RequestContext.TimeEpoch = time.Now().UnixMilli()
	ev.RequestContext.Time = time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700")
	if ev.Headers == nil {
		ev.Headers = map[string]string{}
	}
	delete(ev.Headers, "authorization")
	if bearer != "" {
		ev.Headers["authorization"] = "Bearer " + bearer
	}
	switch b := body.(type) {
	case nil:
		ev.Body = ""
	case string:
		ev.Body = b
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		ev.Body = string(j)
		ev.Headers["content-type"] = "application/json"
	}
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventBody returns the body of a file of events/, so that the steps send
// what the samples send.
func eventBody(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", file))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(ev.Body), &body); err != nil {
		t.Fatalf("events/%s body: %v", file, err)
	}
	return body
}

// httpResult is a function URL response: the buffered admin function's
// (statusCode, headers, body JSON) or the streaming gateway's (a JSON
// prelude, eight NUL bytes, the body).
type httpResult struct {
	status  int
	headers map[string]string
	body    []byte
}

func (r *httpResult) header(name string) string {
	for k, v := range r.headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

func buffered(t *testing.T, out []byte) *httpResult {
	t.Helper()
	var r struct {
		StatusCode      int               `json:"statusCode"`
		Headers         map[string]string `json:"headers"`
		Body            string            `json:"body"`
		IsBase64Encoded bool              `json:"isBase64Encoded"`
		ErrorMessage    string            `json:"errorMessage"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.StatusCode == 0 {
		t.Fatalf("not a function URL response (%v): %s", err, truncate(out))
	}
	if r.IsBase64Encoded {
		t.Fatalf("base64 body: %s", truncate(out))
	}
	return &httpResult{status: r.StatusCode, headers: r.Headers, body: []byte(r.Body)}
}

func streamed(t *testing.T, out []byte) *httpResult {
	t.Helper()
	i := bytes.Index(out, make([]byte, 8))
	if i < 0 {
		t.Fatalf("no streaming prelude in %s", truncate(out))
	}
	var p struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(out[:i], &p); err != nil || p.StatusCode == 0 {
		t.Fatalf("prelude %q: %v", out[:i], err)
	}
	return &httpResult{status: p.StatusCode, headers: p.Headers, body: out[i+8:]}
}

// admin calls the admin function with the master key.
func (st *story) admin(t *testing.T, method, path, query string, body any) *httpResult {
	t.Helper()
	r := buffered(t, st.fns["admin"].invoke(t, urlEvent(t, "admin-key-generate.json", method, path, query, st.master, body)))
	t.Logf("admin %s %s?%s -> %d %s", method, path, query, r.status, truncate(r.body))
	return r
}

func decodeJSON(t *testing.T, r *httpResult, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body: %v: %s", err, truncate(r.body))
	}
}
