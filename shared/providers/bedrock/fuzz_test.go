package bedrock_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/bedrock"
	"github.com/sluice-gw/sluice/shared/providers/chunks/chunkstest"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
	"github.com/sluice-gw/sluice/shared/wire"
)

// decodeNumbers decodes JSON keeping numbers as written.
func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// sameDocument reports whether a Smithy document marshals to the JSON
// object raw holds (numbers compared as written).
func sameDocument(doc document.Interface, raw string) bool {
	j, err := doc.MarshalSmithyDocument()
	if err != nil {
		return false
	}
	a, erra := decodeNumbers([]byte(raw))
	b, errb := decodeNumbers(j)
	return erra == nil && errb == nil && reflect.DeepEqual(a, b)
}

// FuzzTranslateRequest translates any OpenAI chat body to a Converse input.
// Invariants: no panic; an error is a 400; an answer has alternating user
// and assistant turns, each with content; max tokens above any thinking
// budget; documents (tool arguments and schemas, extra fields) that
// marshal, and a tool call's arguments or a tool's parameters that are a
// JSON object arrive as that object, numbers as written.
//
// The seed corpus is in testdata/fuzz/FuzzTranslateRequest.
func FuzzTranslateRequest(f *testing.F) {
	f.Add([]byte(chat(`,"max_tokens":50,"temperature":0.5,"stop":["END"]`, false)))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":"{\"id\":9007199254740993,\"x\":1e400}"}}]}],"reasoning_effort":"high","max_tokens":10}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := bedrock.TranslateRequest(body, modelID)
		if providerstest.Refused(t, err) {
			return
		}
		in := req.Input
		if in.ModelId == nil || *in.ModelId != modelID {
			t.Fatalf("model id %v", in.ModelId)
		}
		var prev types.ConversationRole
		for i, m := range in.Messages {
			if (m.Role != types.ConversationRoleUser && m.Role != types.ConversationRoleAssistant) || m.Role == prev || len(m.Content) == 0 {
				t.Fatalf("message %d: role %q after %q, %d blocks", i, m.Role, prev, len(m.Content))
			}
			prev = m.Role
		}
		if ic := in.InferenceConfig; ic != nil && ic.MaxTokens != nil && *ic.MaxTokens <= 0 {
			t.Fatalf("max tokens %d", *ic.MaxTokens)
		}
		if in.AdditionalModelRequestFields != nil {
			j, err := in.AdditionalModelRequestFields.MarshalSmithyDocument()
			if err != nil {
				t.Fatalf("extra fields: %v", err)
			}
			if b := gjson.GetBytes(j, "thinking.budget_tokens"); b.Type == gjson.Number && in.InferenceConfig != nil && in.InferenceConfig.MaxTokens != nil &&
				int64(*in.InferenceConfig.MaxTokens) <= b.Int() {
				t.Fatalf("max tokens %d not above the thinking budget %d", *in.InferenceConfig.MaxTokens, b.Int())
			}
		}
		// Tool call arguments, in order of appearance.
		var args []string
		gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
			if m.Get("role").String() == "assistant" {
				m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
					args = append(args, tc.Get("function.arguments").String())
					return true
				})
			}
			return true
		})
		n := 0
		for _, m := range in.Messages {
			for _, b := range m.Content {
				tu, ok := b.(*types.ContentBlockMemberToolUse)
				if !ok {
					continue
				}
				if _, err := tu.Value.Input.MarshalSmithyDocument(); err != nil {
					t.Fatalf("tool input: %v", err)
				}
				if n < len(args) && gjson.Valid(args[n]) && gjson.Parse(args[n]).IsObject() && json.Valid([]byte(args[n])) && !sameDocument(tu.Value.Input, args[n]) {
					j, _ := tu.Value.Input.MarshalSmithyDocument()
					t.Fatalf("tool call arguments %s arrive as %s", args[n], j)
				}
				n++
			}
		}
		if tc := in.ToolConfig; tc != nil {
			params := gjson.GetBytes(body, "tools.#.function.parameters").Array()
			for i, tool := range tc.Tools {
				spec := tool.(*types.ToolMemberToolSpec).Value
				schema := spec.InputSchema.(*types.ToolInputSchemaMemberJson).Value
				if _, err := schema.MarshalSmithyDocument(); err != nil {
					t.Fatalf("schema: %v", err)
				}
				if i < len(params) && params[i].IsObject() && json.Valid([]byte(params[i].Raw)) && !sameDocument(schema, params[i].Raw) {
					j, _ := schema.MarshalSmithyDocument()
					t.Fatalf("parameters %s arrive as %s", params[i].Raw, j)
				}
			}
		}
	})
}

// upstreamBody is the body the fake transport answers with (fuzz inputs run
// one at a time in a process).
var upstreamBody atomic.Pointer[[]byte]

// upstreamCalls counts the requests that reached the fake transport.
var upstreamCalls atomic.Int64

type fakeTransport struct{}

func (fakeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	upstreamCalls.Add(1)
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	ct := "application/json"
	if strings.HasSuffix(r.URL.Path, "/converse-stream") {
		ct = "application/vnd.amazon.eventstream"
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(*upstreamBody.Load())), ContentLength: -1, Request: r}, nil
}

// frames encodes a fuzz-described Converse stream: one event per line, its
// first byte the kind, the rest its text. It returns the eventstream bytes
// and the text the client must receive (up to the stream's end).
func frames(spec []byte) ([]byte, string) {
	var out bytes.Buffer
	enc := eventstream.NewEncoder()
	var text strings.Builder
	stopped, ended := false, false
	msg := func(typ string, payload any, exception bool) {
		p, _ := json.Marshal(payload)
		var h eventstream.Headers
		if exception {
			h.Set(":message-type", eventstream.StringValue("exception"))
			h.Set(":exception-type", eventstream.StringValue(typ))
		} else {
			h.Set(":message-type", eventstream.StringValue("event"))
			h.Set(":event-type", eventstream.StringValue(typ))
		}
		h.Set(":content-type", eventstream.StringValue("application/json"))
		_ = enc.Encode(&out, eventstream.Message{Headers: h, Payload: p})
	}
	for _, line := range bytes.Split(spec, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		kind, rest := line[0]%8, string(line[1:])
		// What json.Marshal makes of rest (invalid UTF-8 becomes U+FFFD).
		var s string
		q, _ := json.Marshal(rest)
		_ = json.Unmarshal(q, &s)
		idx := 0
		if len(rest) > 0 {
			idx = int(rest[0] % 4)
		}
		switch kind {
		case 0:
			msg("messageStart", map[string]any{"role": "assistant"}, false)
		case 1:
			msg("contentBlockStart", map[string]any{"contentBlockIndex": idx, "start": map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_" + s, "name": s}}}, false)
		case 2:
			msg("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"text": s}}, false)
			if !ended {
				text.WriteString(s)
			}
		case 3:
			msg("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"reasoningContent": map[string]any{"text": s}}}, false)
		case 4:
			msg("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"toolUse": map[string]any{"input": s}}}, false)
		case 5:
			stops := []string{"end_turn", "tool_use", "max_tokens", "stop_sequence", "guardrail_intervened", "content_filtered", s}
			msg("messageStop", map[string]any{"stopReason": stops[idx%len(stops)]}, false)
			stopped = true
		case 6:
			var u [4]uint32
			for i := range u {
				if len(rest) >= 4*(i+1) {
					u[i] = binary.LittleEndian.Uint32([]byte(rest[4*i:]))
				}
			}
			msg("metadata", map[string]any{"usage": map[string]any{"inputTokens": u[0] >> 1, "outputTokens": u[1] >> 1,
				"totalTokens": 0, "cacheReadInputTokens": u[2] >> 1, "cacheWriteInputTokens": u[3] >> 1}, "metrics": map[string]any{"latencyMs": 1}}, false)
			if stopped {
				ended = true
			}
		case 7:
			excs := []string{"throttlingException", "modelStreamErrorException", "validationException", "internalServerException", "serviceUnavailableException"}
			msg(excs[idx%len(excs)], map[string]any{"message": s}, true)
			ended = true
		}
	}
	return out.Bytes(), text.String()
}

// leaks waits for the goroutines started by a call to end, and reports
// whether some did not within a generous bound (they end at once when
// nothing leaks; the bound only matters when something does).
func leaks(before int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			return true
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	return false
}

// FuzzDo gives Do any upstream answer: a Converse JSON body (stream false),
// raw eventstream bytes (raw), or a Converse stream described by the input
// and encoded in valid frames. Invariants: no panic, no goroutine left
// after Close; a clean error, or a 200 chat completion (JSON, a known
// finish reason, usage the gateway reads) or OpenAI SSE (one data line per
// event, JSON chunks, nothing after [DONE] or an error; a clean end only
// after [DONE]); for described streams the deltas' text is exactly the
// text sent before the stream's end.
//
// The seed corpus is in testdata/fuzz/FuzzDo.
func FuzzDo(f *testing.F) {
	f.Add([]byte{0, '\n', 2, 'H', 'e', 'l', 'l', 'o', ' ', '\n', 2, 'w', 'o', 'r', 'l', 'd', '\n', 5, 0, '\n', 6, 20, 0, 0, 0, 6}, true, false)
	f.Add([]byte(`{"output":{"message":{"role":"assistant","content":[{"text":"Hello"},{"toolUse":{"toolUseId":"t1","name":"f","input":{"a":1}}}]}},"stopReason":"tool_use","usage":{"inputTokens":20,"outputTokens":6,"totalTokens":26,"cacheReadInputTokens":8}}`), false, false)
	d := &config.Deployment{ID: "b1", Provider: "bedrock", Model: "converse/" + modelID, Protocol: config.ProtocolBedrock,
		Implemented: true, APIBase: "http://bedrock.invalid",
		AWS: config.AWSParams{Region: "us-west-2", AccessKeyID: "AKIDFAKE", SecretAccessKey: "fake-secret"}}
	f.Setenv("AWS_CA_BUNDLE", "") // with a bundle the SDK uses its own transport, not the fake
	hc := &http.Client{Transport: fakeTransport{}}
	shared := bedrock.NewClients(hc)
	f.Fuzz(func(t *testing.T, data []byte, stream, raw bool) {
		body, wantText := data, ""
		if stream && !raw {
			body, wantText = frames(data)
		}
		upstreamBody.Store(&body)
		call := wire.Call{Op: wire.OpChat, Stream: stream, Body: []byte(chat("", stream))}
		// Under -race, a client per input: the streams of one SDK client
		// share an eventstream codec whose scratch fields race (benign,
		// but -race fails; https://github.com/aws/smithy-go/issues/714).
		// Fuzzing reuses one: building a client costs milliseconds.
		clients := shared
		if raceEnabled {
			clients = bedrock.NewClients(hc)
		}
		if _, err := clients.Client(context.Background(), d); err != nil { // built once, outside the goroutine count
			t.Fatal(err)
		}
		before, calls := runtime.NumGoroutine(), upstreamCalls.Load()
		resp, err := clients.Do(context.Background(), d, call)
		if upstreamCalls.Load() != calls+1 {
			t.Fatalf("the call did not reach the fake upstream: %v", err)
		}
		if err != nil {
			if resp != nil {
				t.Fatalf("both a response and an error: %v", err)
			}
			if leaks(before) {
				t.Fatalf("goroutines left after an error: %d, %d before", runtime.NumGoroutine(), before)
			}
			return
		}
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if !stream {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := gjson.ParseBytes(b)
			if !json.Valid(b) || r.Get("object").String() != "chat.completion" || r.Get("choices.0.message.role").String() != "assistant" ||
				!finishReasons[r.Get("choices.0.finish_reason").String()] {
				t.Fatalf("completion %s", b)
			}
			if _, ok := wire.UsageOf(b); !ok {
				t.Fatalf("usage not read: %s", b)
			}
			return
		}
		text := readStream(t, resp.Body)
		resp.Body.Close()
		if leaks(before) {
			t.Fatalf("goroutines left after Close: %d, %d before", runtime.NumGoroutine(), before)
		}
		if !raw && text != wantText {
			t.Fatalf("text %q, sent %q", text, wantText)
		}
	})
}

var finishReasons = map[string]bool{"stop": true, "length": true, "tool_calls": true, "content_filter": true}

// readStream checks an OpenAI SSE body and returns its deltas' text.
func readStream(t *testing.T, body io.Reader) string {
	t.Helper()
	events, _ := chunkstest.Read(t, body)
	var text strings.Builder
	for _, data := range events {
		c := gjson.Parse(data)
		if u := c.Get("usage"); u.Exists() {
			if _, ok := wire.UsageOf([]byte(data)); !ok {
				t.Fatalf("usage chunk not read: %s", data)
			}
		}
		if f := c.Get("choices.0.finish_reason"); f.Exists() && f.Type != gjson.Null && !finishReasons[f.String()] {
			t.Fatalf("finish reason %s", f.Raw)
		}
		text.WriteString(c.Get("choices.0.delta.content").String())
	}
	return text.String()
}
