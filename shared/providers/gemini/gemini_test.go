package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/providers/chunks/chunkstest"
	"github.com/sluice-gw/sluice/shared/providers/gemini"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
	"github.com/sluice-gw/sluice/shared/wire"
)

const testKey = "AIzaSyTESTKEY0123456789abcdefghij"

// fake is a fake Gemini API: it records each request (path, query,
// headers, body) and answers with status and body (an SSE stream when body
// starts with "data:").
type fake struct {
	reqs   providerstest.Log[recorded]
	status int
	body   string
	srv    *httptest.Server
}

type recorded struct {
	path, query string
	header      http.Header
	body        string
}

func newFake(t *testing.T, status int, body string) *fake {
	f := &fake{status: status, body: body}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.reqs.Add(recorded{r.URL.Path, r.URL.RawQuery, r.Header.Clone(), string(b)})
		if strings.HasPrefix(f.body, "data:") {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(f.status)
		io.WriteString(w, f.body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) last(t *testing.T) recorded {
	t.Helper()
	return f.reqs.Last(t, "the fake Gemini API")
}

// deployment is a gemini/ deployment in front of f, whose api_base is the
// fake's base with its version (as LiteLLM reads api_base).
func (f *fake) deployment() *config.Deployment {
	return &config.Deployment{ID: "g1", Provider: "gemini", Model: "gemini-2.5-flash", Protocol: config.ProtocolGemini,
		Implemented: true, APIBase: f.srv.URL + "/v1beta", APIKey: testKey}
}

func do(t *testing.T, d *config.Deployment, op wire.Op, body string) (*http.Response, error) {
	t.Helper()
	return providers.New(http.DefaultClient).Do(context.Background(), d, wire.Call{Op: op, Body: []byte(body), Stream: gjson.Get(body, "stream").Bool()})
}

func jsonEqual(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got  %s\n want %s", what, got, want)
	}
}

// readAll is a unary answer's body.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	return string(chunkstest.Body(t)(resp, nil))
}

const answer = `{"candidates":[{"content":{"parts":[{"text":"Let me think.","thought":true},{"text":"Hello"},{"text":" there"}],"role":"model"},"finishReason":"STOP","index":0}],
"usageMetadata":{"promptTokenCount":120,"cachedContentTokenCount":20,"candidatesTokenCount":7,"thoughtsTokenCount":30,"totalTokenCount":157},"modelVersion":"gemini-2.5-flash","responseId":"abc"}`

// A plain chat: the path and key header, the translated body (system
// instruction, multi-turn with model turns, images by data URL and by URI,
// sampling params), and the completion with its usage.
func TestChatWireFormat(t *testing.T) {
	f := newFake(t, 200, answer)
	resp, err := do(t, f.deployment(), wire.OpChat, `{"model":"gemini-2.5-flash","messages":[
		{"role":"system","content":"Be brief."},
		{"role":"user","content":[{"type":"text","text":"What is this?"},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},
			{"type":"image_url","image_url":{"url":"gs://bucket/cat.jpg"}}]},
		{"role":"assistant","content":"A cat."},
		{"role":"user","content":"And now?"}],
		"max_tokens":100,"temperature":0.2,"top_p":0.9,"stop":["END"],"seed":7,"n":2,"user":"u1"}`)
	if err != nil {
		t.Fatal(err)
	}
	r := f.last(t)
	if r.path != "/v1beta/models/gemini-2.5-flash:generateContent" || r.query != "" {
		t.Fatalf("path %s?%s", r.path, r.query)
	}
	if r.header.Get("X-Goog-Api-Key") != "" || r.header.Get("Authorization") != "Bearer "+testKey {
		t.Fatalf("a proxy's api_base takes the key as a bearer token; headers %v", r.header)
	}
	jsonEqual(t, "request", []byte(r.body), `{
		"contents":[
			{"role":"user","parts":[{"text":"What is this?"},{"inline_data":{"mime_type":"image/png","data":"iVBORw0KGgo="}},{"file_data":{"mime_type":"image/jpeg","file_uri":"gs://bucket/cat.jpg"}}]},
			{"role":"model","parts":[{"text":"A cat."}]},
			{"role":"user","parts":[{"text":"And now?"}]}],
		"system_instruction":{"parts":[{"text":"Be brief."}]},
		"generationConfig":{"temperature":0.2,"top_p":0.9,"max_output_tokens":100,"candidate_count":2,"stop_sequences":["END"],"seed":7}}`)
	out := readAll(t, resp)
	got := gjson.Parse(out)
	if got.Get("id").String() != "chatcmpl-abc" || got.Get("model").String() != "gemini-2.5-flash" || got.Get("object").String() != "chat.completion" {
		t.Fatalf("completion %s", out)
	}
	jsonEqual(t, "choices", []byte(got.Get("choices").Raw), `[{"index":0,"message":{"role":"assistant","content":"Hello there","reasoning_content":"Let me think."},"finish_reason":"stop"}]`)
	// Thinking billed as output; cached tokens part of the prompt.
	jsonEqual(t, "usage", []byte(got.Get("usage").Raw), `{"prompt_tokens":120,"completion_tokens":37,"total_tokens":157,
		"prompt_tokens_details":{"cached_tokens":20},"cache_read_input_tokens":20,"cache_creation_input_tokens":0,
		"completion_tokens_details":{"reasoning_tokens":30}}`)
}

// Google's own host takes the key in x-goog-api-key; it is never put in the
// URL.
func TestGoogleHostKeyHeader(t *testing.T) {
	d := &config.Deployment{ID: "g1", Provider: "gemini", Model: "gemini-2.5-flash", APIKey: testKey}
	req, _ := http.NewRequest(http.MethodPost, "https://generativelanguage.googleapis.com/v1beta/models/x:generateContent", nil)
	if err := (gemini.AIStudio{}).Authorize(context.Background(), d, req); err != nil {
		t.Fatal(err)
	}
	if req.Header.Get("X-Goog-Api-Key") != testKey || req.Header.Get("Authorization") != "" || strings.Contains(req.URL.String(), testKey) {
		t.Fatalf("headers %v, URL %s", req.Header, req.URL)
	}
	u, _ := (gemini.AIStudio{}).URL(&config.Deployment{}, "gemini-2.5-pro", gemini.MethodGenerate)
	if u != "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent" {
		t.Fatalf("default URL %s", u)
	}
}

// Tools, tool_choice and tool results go over as function declarations
// (their schemas cleaned), a function calling config, functionCall and
// functionResponse parts; the answer's function calls come back as tool
// calls, their thought signature kept in the id and sent back.
func TestToolsWireFormat(t *testing.T) {
	f := newFake(t, 200, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2lnMQ=="}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":10,"totalTokenCount":60}}`)
	resp, err := do(t, f.deployment(), wire.OpChat, `{"model":"gemini-2.5-flash","messages":[
		{"role":"user","content":"Weather in Paris and Rome?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1__thought__c2lnMA==","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},
		{"role":"tool","tool_call_id":"call_1__thought__c2lnMA==","content":"sunny"}],
		"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather of a city","strict":true,
			"parameters":{"type":"object","additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#",
				"properties":{"city":{"type":"string"},"unit":{"type":["string","null"],"enum":["c","f"]}},"required":["city"]}}},
			{"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}}],
		"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "request", []byte(f.last(t).body), `{
		"contents":[
			{"role":"user","parts":[{"text":"Weather in Paris and Rome?"}]},
			{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Rome"}},"thoughtSignature":"c2lnMA=="}]},
			{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"content":"sunny"}}}]}],
		"tools":[{"function_declarations":[
			{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"],"nullable":true}},"required":["city"]}},
			{"name":"now"}]}],
		"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowed_function_names":["get_weather"]}}}`)
	out := gjson.Parse(readAll(t, resp))
	c := out.Get("choices.0")
	if c.Get("finish_reason").String() != "tool_calls" || c.Get("message.content").Type != gjson.Null {
		t.Fatalf("choice %s", c.Raw)
	}
	tc := c.Get("message.tool_calls.0")
	if tc.Get("function.name").String() != "get_weather" || tc.Get("function.arguments").String() != `{"city":"Paris"}` ||
		!strings.HasPrefix(tc.Get("id").String(), "call_") || !strings.HasSuffix(tc.Get("id").String(), "__thought__c2lnMQ==") {
		t.Fatalf("tool call %s", tc.Raw)
	}
}

// response_format json_schema: responseMimeType and the cleaned schema
// ($defs inlined, anyOf null as nullable, propertyOrdering, additionalProperties
// dropped); reasoning_effort as a thinking budget.
func TestJSONSchemaAndThinking(t *testing.T) {
	f := newFake(t, 200, answer)
	_, err := do(t, f.deployment(), wire.OpChat, `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"A person"}],
		"reasoning_effort":"medium",
		"response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,"schema":{
			"type":"object","additionalProperties":false,
			"properties":{"name":{"type":"string"},"pet":{"anyOf":[{"$ref":"#/$defs/Pet"},{"type":"null"}]}},
			"required":["name","pet"],
			"$defs":{"Pet":{"type":"object","properties":{"kind":{"type":"string","format":"uri"}}}}}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "generationConfig", []byte(gjson.Get(f.last(t).body, "generationConfig").Raw), `{
		"response_mime_type":"application/json",
		"response_schema":{"type":"object","properties":{"name":{"type":"string"},"pet":{"type":"object","properties":{"kind":{"type":"string"}},"nullable":true}},
			"propertyOrdering":["name","pet"],"required":["name","pet"]},
		"thinkingConfig":{"thinkingBudget":2048,"includeThoughts":true}}`)
}

func TestThinkingBudgets(t *testing.T) {
	for _, tc := range []struct{ model, effort, want string }{
		{"gemini-2.5-flash", "low", `{"thinkingBudget":1024,"includeThoughts":true}`},
		{"gemini-2.5-flash", "high", `{"thinkingBudget":4096,"includeThoughts":true}`},
		{"gemini-2.5-flash", "none", `{"thinkingBudget":0}`},
		{"gemini-2.5-flash", "minimal", `{"thinkingBudget":1,"includeThoughts":true}`},
		{"gemini-2.5-flash-lite", "minimal", `{"thinkingBudget":512,"includeThoughts":true}`},
		{"gemini-2.5-pro", "minimal", `{"thinkingBudget":128,"includeThoughts":true}`},
		{"gemini-3-pro-preview", "medium", `{"thinkingLevel":"high","includeThoughts":true}`},
		{"gemini-3-flash-preview", "minimal", `{"thinkingLevel":"minimal","includeThoughts":true}`},
	} {
		out, err := gemini.TranslateRequest([]byte(`{"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"`+tc.effort+`"}`), gemini.Options{Model: tc.model})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.model, tc.effort, err)
		}
		jsonEqual(t, tc.model+" "+tc.effort, []byte(gjson.GetBytes(out, "generationConfig.thinkingConfig").Raw), tc.want)
	}
	if _, err := gemini.TranslateRequest([]byte(`{"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"max"}`), gemini.Options{}); !isKind(err, apierr.InvalidRequest) {
		t.Fatalf("unknown effort: %v", err)
	}
}

func isKind(err error, k apierr.Kind) bool {
	var e *apierr.Error
	return errors.As(err, &e) && e.Kind == k
}

const stream = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":9,\"totalTokenCount\":9},\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"s1\"}\r\n\r\n" +
	"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lo\"},{\"functionCall\":{\"name\":\"f\",\"args\":{\"a\":1}}}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":4,\"thoughtsTokenCount\":2,\"totalTokenCount\":15},\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"s1\"}\r\n\r\n"

// A stream: streamGenerateContent?alt=sse, its events translated to chunks
// (text, a tool call, the finish reason), the usage chunk when asked, [DONE].
func TestStreamWireFormat(t *testing.T) {
	f := newFake(t, 200, stream)
	resp, err := do(t, f.deployment(), wire.OpChat, `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.last(t); r.path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || r.query != "alt=sse" {
		t.Fatalf("path %s?%s", r.path, r.query)
	}
	var deltas []string
	var text strings.Builder
	var finish, usage string
	for _, ev := range strings.Split(readAll(t, resp), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			deltas = append(deltas, data)
			continue
		}
		c := gjson.Parse(data)
		if c.Get("id").String() != "chatcmpl-s1" {
			t.Fatalf("chunk %s", data)
		}
		text.WriteString(c.Get("choices.0.delta.content").String())
		if fr := c.Get("choices.0.finish_reason").String(); fr != "" {
			finish = fr
		}
		if u := c.Get("usage"); u.Exists() {
			usage = u.Raw
		}
		if tc := c.Get("choices.0.delta.tool_calls.0"); tc.Exists() {
			deltas = append(deltas, tc.Get("function.name").String()+tc.Get("function.arguments").String())
		}
	}
	if text.String() != "Hello" || finish != "tool_calls" || !reflect.DeepEqual(deltas, []string{"f", `{"a":1}`, "[DONE]"}) {
		t.Fatalf("text %q finish %q deltas %q", text.String(), finish, deltas)
	}
	if gjson.Get(usage, "prompt_tokens").Int() != 9 || gjson.Get(usage, "completion_tokens").Int() != 6 {
		t.Fatalf("usage %s", usage)
	}
}

// A stream cut before its finish reason is an error, never a clean end.
func TestBrokenStream(t *testing.T) {
	cut := stream[:strings.Index(stream, "\r\n\r\n")+4]
	f := newFake(t, 200, cut)
	resp, err := do(t, f.deployment(), wire.OpChat, `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read error %v, want io.ErrUnexpectedEOF", err)
	}
}

// Google's errors, classified: 429 RESOURCE_EXHAUSTED is a rate limit, a
// 400 over the context window a context-window error, an invalid key (a
// 400 API_KEY_INVALID) and 403 auth errors, a blocked prompt a content
// policy violation; no message quotes the key, and none, a missing model
// neither, is the request's own fault.
func TestErrors(t *testing.T) {
	providerstest.Errors(t, []providerstest.ErrorCase{
		{Name: "429", Status: 429, Body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`, Kind: apierr.UpstreamRateLimited},
		{Name: "429 stream", Status: 429, Body: `[{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}]`, Stream: true, Kind: apierr.UpstreamRateLimited},
		{Name: "context", Status: 400, Body: `{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`, Kind: apierr.ContextWindowExceeded},
		{Name: "bad key", Status: 400, Body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`, Kind: apierr.UpstreamAuth},
		{Name: "403", Status: 403, Body: `{"error":{"code":403,"message":"Method doesn't allow unregistered callers (key ` + testKey + `).","status":"PERMISSION_DENIED"}}`, Kind: apierr.UpstreamAuth},
		{Name: "blocked", Status: 200, Body: `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":5}}`, Kind: apierr.ContentPolicy},
		{Name: "safety stop", Status: 200, Body: `{"candidates":[{"finishReason":"SAFETY","index":0,"safetyRatings":[]}]}`, Kind: apierr.ContentPolicy},
		{Name: "blocked stream", Status: 200, Body: "data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"}}\n\n", Stream: true, Kind: apierr.ContentPolicy},
		{Name: "error event first", Status: 200, Body: "data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\n\n", Stream: true, Kind: apierr.UpstreamServer},
		{Name: "404", Status: 404, Body: `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta, or is not supported for generateContent.","status":"NOT_FOUND"}}`, Kind: apierr.UpstreamNotFound},
	}, func(t *testing.T, c providerstest.ErrorCase) (*http.Response, error) {
		return do(t, newFake(t, c.Status, c.Body).deployment(), wire.OpChat, `{"messages":[{"role":"user","content":"hi"}],"stream":`+strconv.FormatBool(c.Stream)+`}`)
	}, testKey)
}

// Embeddings: embedContent for one text, batchEmbedContents for a list,
// dimensions as outputDimensionality; OpenAI's list back.
func TestEmbeddings(t *testing.T) {
	f := newFake(t, 200, `{"embedding":{"values":[0.5,-0.25]}}`)
	d := f.deployment()
	d.Model = "gemini-embedding-001"
	resp, err := do(t, d, wire.OpEmbeddings, `{"model":"gemini-embedding-001","input":"hello","dimensions":2}`)
	if err != nil {
		t.Fatal(err)
	}
	r := f.last(t)
	if r.path != "/v1beta/models/gemini-embedding-001:embedContent" {
		t.Fatalf("path %s", r.path)
	}
	jsonEqual(t, "request", []byte(r.body), `{"content":{"parts":[{"text":"hello"}]},"outputDimensionality":2}`)
	jsonEqual(t, "response", []byte(readAll(t, resp)), `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25]}],"model":"gemini-embedding-001"}`)

	f.body = `{"embeddings":[{"values":[1]},{"values":[2]}]}`
	resp, err = do(t, d, wire.OpEmbeddings, `{"model":"gemini-embedding-001","input":["a","b"],"encoding_format":"base64"}`)
	if err != nil {
		t.Fatal(err)
	}
	r = f.last(t)
	if r.path != "/v1beta/models/gemini-embedding-001:batchEmbedContents" {
		t.Fatalf("path %s", r.path)
	}
	jsonEqual(t, "request", []byte(r.body), `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]}},{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"b"}]}}]}`)
	out := gjson.Parse(readAll(t, resp))
	if out.Get("data.#").Int() != 2 || out.Get("data.1.embedding").String() != "AAAAQA==" { // float32 2.0, little-endian
		t.Fatalf("response %s", out.Raw)
	}
}

// A transport error never quotes the URL (an Endpoint may put a key in it).
func TestTransportErrorHasNoURL(t *testing.T) {
	d := &config.Deployment{ID: "g1", Provider: "gemini", Model: "gemini-2.5-flash", Protocol: config.ProtocolGemini,
		Implemented: true, APIBase: "http://127.0.0.1:1/v1beta?key=" + testKey, APIKey: testKey}
	_, err := do(t, d, wire.OpChat, `{"messages":[{"role":"user","content":"hi"}]}`)
	if err == nil || strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "127.0.0.1:1/v1beta") {
		t.Fatalf("error %v", err)
	}
	var e *apierr.Error
	if !errors.As(err, &e) || e.Kind != apierr.UpstreamConnection {
		t.Fatalf("error %v, want a connection error", err)
	}
}

// NewStream translates a stream body on its own (a caller that sent the
// request itself): without include_usage, no usage chunk, and [DONE] last.
func TestNewStreamWithoutUsage(t *testing.T) {
	s := gemini.NewStream(io.NopCloser(strings.NewReader(stream)), gemini.Options{Model: "gemini-2.5-flash"}, false, 1)
	defer s.Close()
	events, err := chunkstest.Events(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if gjson.Get(ev, "usage").Exists() {
			t.Fatalf("a usage chunk nobody asked for: %s", ev)
		}
	}
	if n := len(events); n < 2 || events[n-1] != "[DONE]" || gjson.Get(events[n-2], "choices.0.finish_reason").String() != "tool_calls" {
		t.Fatalf("events %q", events)
	}
}

// A request of only a system prompt sends it as the user's turn; one with
// no content at all is a 400.
func TestOnlySystem(t *testing.T) {
	out, err := gemini.TranslateRequest([]byte(`{"messages":[{"role":"system","content":"Say hi."}]}`), gemini.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "request", out, `{"contents":[{"role":"user","parts":[{"text":"Say hi."}]}]}`)
	if _, err := gemini.TranslateRequest([]byte(`{"messages":[{"role":"user","content":""}]}`), gemini.Options{}); !isKind(err, apierr.InvalidRequest) {
		t.Fatalf("empty: %v", err)
	}
}
