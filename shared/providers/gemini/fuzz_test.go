package gemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/chunks/chunkstest"
	"github.com/sluice-gw/sluice/shared/providers/gemini"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
	"github.com/sluice-gw/sluice/shared/sse"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Any chat body translates to a generateContent body with alternating-free
// but non-empty contents of user and model turns, or is refused with a 400.
func FuzzTranslateRequest(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],"max_tokens":100,"reasoning_effort":"low"}`), "gemini-2.5-flash")
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a__thought__s","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"ok"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"$ref":"#/$defs/A","$defs":{"A":{"$ref":"#/$defs/A"}}}}}]}`), "gemini-3-pro-preview")
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":["object","null"],"properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}],"description":"d"}}}}}}`), "gemini-2.5-pro")
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		out, err := gemini.TranslateRequest(body, gemini.Options{Model: model})
		if providerstest.Refused(t, err) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("not JSON: %s\nfrom %s", out, body)
		}
		r := gjson.ParseBytes(out)
		contents := r.Get("contents").Array()
		if len(contents) == 0 {
			t.Fatalf("no contents: %s", out)
		}
		for i, c := range contents {
			if role := c.Get("role").String(); role != "user" && role != "model" {
				t.Fatalf("content %d: role %q", i, role)
			}
			if !c.Get("parts").IsArray() || len(c.Get("parts").Array()) == 0 {
				t.Fatalf("content %d: parts %s", i, c.Get("parts").Raw)
			}
		}
	})
}

// Any upstream stream becomes a well-framed OpenAI stream (chunkstest.Read)
// whose text is the text the upstream carried, in order, up to where the
// translation stopped (all of it when it ended with [DONE]); or a leading
// error with a status and an OpenAI error body.
func FuzzStream(f *testing.F) {
	f.Add([]byte(stream), true)
	f.Add([]byte(stream[:len(stream)/2]), false)
	f.Add([]byte("data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"}}\n\n"), true)
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\ndata: {\"error\":{\"code\":503,\"status\":\"UNAVAILABLE\",\"message\":\"x\"}}\n\n"), true)
	d := &config.Deployment{ID: "g1", Provider: "gemini", Model: "gemini-2.5-flash", Protocol: config.ProtocolGemini,
		Implemented: true, APIBase: "http://gemini.invalid/v1beta", APIKey: testKey}
	f.Fuzz(func(t *testing.T, data []byte, includeUsage bool) {
		body := `{"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":` + map[bool]string{true: "true", false: "false"}[includeUsage] + `}}`
		p := gemini.New(&http.Client{Transport: providerstest.Upstream{Status: 200, Body: data}})
		resp, err := p.Do(context.Background(), d, wire.Call{Op: wire.OpChat, Stream: true, Body: []byte(body)})
		if err != nil {
			t.Fatalf("a stream failed before its body was read: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			chunkstest.LeadingError(t, resp)
			return
		}
		events, err := chunkstest.Read(t, resp.Body)
		text, want := chunkstest.Deltas(events, "content"), refText(data)
		done := len(events) > 0 && events[len(events)-1] == "[DONE]"
		if done && text != want || !strings.HasPrefix(want, text) {
			t.Fatalf("text %q, upstream %q (done %v, err %v)", text, want, done, err)
		}
	})
}

// refText is the answer text of a Gemini stream: the text parts of the first
// candidate that are not thoughts, up to an error event, each invalid UTF-8
// byte as U+FFFD (as a JSON string carries it).
func refText(data []byte) string {
	rd := sse.NewReader(bytes.NewReader(data))
	defer rd.Release()
	var b strings.Builder
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		d := sse.Data(ev)
		if gjson.GetBytes(d, "error").IsObject() {
			break
		}
		gjson.GetBytes(d, "candidates.0.content.parts").ForEach(func(_, p gjson.Result) bool {
			if !p.Get("functionCall").IsObject() && !p.Get("thought").Bool() {
				for _, r := range p.Get("text").String() {
					b.WriteRune(r)
				}
			}
			return true
		})
	}
	return b.String()
}
