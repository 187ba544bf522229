package bedrock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/providers/bedrock"
	"github.com/sluice-gw/sluice/shared/providers/bedrock/bedrocktest"
	"github.com/sluice-gw/sluice/shared/providers/chunks/chunkstest"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
	"github.com/sluice-gw/sluice/shared/wire"
)

const modelID = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"

func setup(t *testing.T) (*bedrocktest.Server, *providers.Dispatcher, *config.Deployment) {
	srv := bedrocktest.New("b1")
	t.Cleanup(srv.Close)
	d := &config.Deployment{ID: "b1", Provider: "bedrock", Model: "converse/" + modelID, Protocol: config.ProtocolBedrock,
		Implemented: true, APIBase: srv.URL,
		AWS: config.AWSParams{Region: "us-west-2", AccessKeyID: "AKIDFAKE", SecretAccessKey: "fake-secret"}}
	client := providers.NewHTTPClient()
	t.Cleanup(client.CloseIdleConnections)
	return srv, providers.New(client), d
}

func do(t *testing.T, p *providers.Dispatcher, d *config.Deployment, body string, stream bool) (*http.Response, error) {
	t.Helper()
	return p.Do(context.Background(), d, wire.Call{Op: wire.OpChat, Body: []byte(body), Stream: stream})
}

func chat(extra string, stream bool) string {
	return fmt.Sprintf(`{"model":"claude","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],"stream":%v,"stream_options":{"include_usage":true}%s}`, stream, extra)
}

var wantUsage = wire.Usage{PromptTokens: 32, CompletionTokens: 6, TotalTokens: 38, CachedTokens: 8, CacheCreationTokens: 4}

func TestConverse(t *testing.T) {
	srv, p, d := setup(t)
	b := chunkstest.Body(t)(do(t, p, d, chat(`,"max_tokens":50,"temperature":0.5,"stop":["END"]`, false), false))
	if gjson.GetBytes(b, "choices.0.message.content").String() != "Hello from b1." || gjson.GetBytes(b, "choices.0.finish_reason").String() != "stop" ||
		gjson.GetBytes(b, "model").String() != modelID || gjson.GetBytes(b, "object").String() != "chat.completion" {
		t.Fatalf("body %s", b)
	}
	if u, ok := wire.UsageOf(b); !ok || u != wantUsage {
		t.Fatalf("usage %+v", u)
	}
	c := srv.Calls()[0]
	if c.ModelID != modelID || c.Stream || !strings.Contains(c.Auth, "/us-west-2/bedrock/aws4_request") || !strings.Contains(c.Auth, "AKIDFAKE") {
		t.Fatalf("call %+v", c)
	}
	sent := gjson.Parse(c.Body)
	if sent.Get("system.0.text").String() != "Be brief." || sent.Get("messages.0.content.0.text").String() != "hi" ||
		sent.Get("inferenceConfig.maxTokens").Int() != 50 || sent.Get("inferenceConfig.temperature").Float() != 0.5 ||
		sent.Get("inferenceConfig.stopSequences.0").String() != "END" {
		t.Fatalf("sent %s", c.Body)
	}
}

func TestConverseStream(t *testing.T) {
	srv, p, d := setup(t)
	evs := chunkstest.Streamed(t)(do(t, p, d, chat("", true), true))
	n := len(evs)
	if chunkstest.Deltas(evs, "content") != "Hello from b1." || gjson.Get(evs[0], "choices.0.delta.role").String() != "assistant" ||
		gjson.Get(evs[n-3], "choices.0.finish_reason").String() != "stop" || evs[n-1] != "[DONE]" {
		t.Fatalf("events %q", evs)
	}
	if u, ok := wire.UsageOf([]byte(evs[n-2])); !ok || u != wantUsage || gjson.Get(evs[n-2], "choices.#").Int() != 0 {
		t.Fatalf("usage chunk %s", evs[n-2])
	}
	if c := srv.Calls()[0]; !c.Stream || c.ModelID != modelID {
		t.Fatalf("call %+v", c)
	}
}

func TestToolsAndReasoning(t *testing.T) {
	srv, p, d := setup(t)
	tools := `,"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}],"tool_choice":"required","reasoning_effort":"low"`
	for _, stream := range []bool{false, true} {
		resp, err := do(t, p, d, chat(tools, stream), stream)
		if err != nil {
			t.Fatal(err)
		}
		var args, name, id, finish, reasoning string
		if !stream {
			b, _ := io.ReadAll(resp.Body)
			r := gjson.ParseBytes(b)
			tc := r.Get("choices.0.message.tool_calls.0")
			args, name, id = tc.Get("function.arguments").String(), tc.Get("function.name").String(), tc.Get("id").String()
			finish, reasoning = r.Get("choices.0.finish_reason").String(), r.Get("choices.0.message.reasoning_content").String()
			if r.Get("choices.0.message.content").Type != gjson.Null {
				t.Errorf("content %s, want null beside tool calls", r.Get("choices.0.message.content").Raw)
			}
		} else {
			evs, err := chunkstest.Events(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				d := gjson.Get(ev, "choices.0.delta")
				reasoning += d.Get("reasoning_content").String()
				if tc := d.Get("tool_calls.0"); tc.Exists() {
					if v := tc.Get("id").String(); v != "" {
						id, name = v, tc.Get("function.name").String()
					}
					args += tc.Get("function.arguments").String()
				}
				if v := gjson.Get(ev, "choices.0.finish_reason").String(); v != "" {
					finish = v
				}
			}
		}
		resp.Body.Close()
		if gjson.Get(args, "location").String() != "Paris" || name != "get_weather" || id != "tooluse_fake1" || finish != "tool_calls" || reasoning != "Thinking about it." {
			t.Fatalf("stream=%v: tool %s %s %s finish %s reasoning %q", stream, id, name, args, finish, reasoning)
		}
	}
	sent := gjson.Parse(srv.Calls()[0].Body)
	if sent.Get("toolConfig.toolChoice.any").Raw != "{}" || sent.Get("toolConfig.tools.0.toolSpec.inputSchema.json.properties.location.type").String() != "string" ||
		sent.Get("additionalModelRequestFields.thinking.budget_tokens").Int() != 1024 {
		t.Fatalf("sent %s", srv.Calls()[0].Body)
	}

	// The round trip: the assistant's tool call and the tool's result.
	body := `{"model":"claude","messages":[{"role":"user","content":"weather?"},
	  {"role":"assistant","content":null,"tool_calls":[{"id":"tooluse_fake1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]},
	  {"role":"tool","tool_call_id":"tooluse_fake1","content":"18C"}]` + tools + `}`
	b := chunkstest.Body(t)(do(t, p, d, body, false))
	if got := gjson.GetBytes(b, "choices.0.message.content").String(); got != "It is 18C in Paris." {
		t.Fatalf("reply %s", b)
	}
	sent = gjson.Parse(srv.Calls()[2].Body)
	if sent.Get("messages.1.content.0.toolUse.input.location").String() != "Paris" || sent.Get("messages.2.role").String() != "user" ||
		sent.Get("messages.2.content.0.toolResult.toolUseId").String() != "tooluse_fake1" {
		t.Fatalf("sent %s", srv.Calls()[2].Body)
	}
}

func TestImages(t *testing.T) {
	srv, p, d := setup(t)
	img := func(url string) string {
		return `{"model":"claude","messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"` + url + `"}}]}]}`
	}
	b := chunkstest.Body(t)(do(t, p, d, img("data:image/png;base64,iVBORw0KGgo="), false))
	if got := gjson.GetBytes(b, "choices.0.message.content").String(); got != "A png image of 12 base64 bytes." {
		t.Fatalf("reply %s", b)
	}
	_, err := do(t, p, d, img("https://example.com/cat.png"), false)
	var e *apierr.Error
	if !errors.As(err, &e) || e.HTTPStatus() != 400 || !strings.Contains(e.Message, "data URL") {
		t.Fatalf("http image: %v", err)
	}
	if n := len(srv.Calls()); n != 1 {
		t.Fatalf("%d calls, want the http image refused before any call", n)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		fault  bedrocktest.Fault
		stream bool
		kind   apierr.Kind
		status int
	}{
		{bedrocktest.Throttle, false, apierr.UpstreamRateLimited, 429},
		{bedrocktest.Throttle, true, apierr.UpstreamRateLimited, 429},
		{bedrocktest.ThrottleFirstFrame, true, apierr.UpstreamRateLimited, 429},
		{bedrocktest.TooLong, false, apierr.ContextWindowExceeded, 400},
		{bedrocktest.TooLong, true, apierr.ContextWindowExceeded, 400},
		{bedrocktest.Validation, false, apierr.UpstreamBadRequest, 400},
		{bedrocktest.AccessDenied, false, apierr.UpstreamAuth, 502},
		{bedrocktest.NotFound, false, apierr.UpstreamNotFound, 0},
		{bedrocktest.Unavailable, true, apierr.UpstreamServer, 503},
		{bedrocktest.Internal, false, apierr.UpstreamServer, 502},
		{bedrocktest.ModelTimeout, false, apierr.UpstreamTimeout, 504},
	} {
		t.Run(fmt.Sprintf("%s/stream=%v", tc.fault, tc.stream), func(t *testing.T) {
			srv, p, d := setup(t)
			srv.SetFault(tc.fault)
			resp, err := do(t, p, d, chat("", tc.stream), tc.stream)
			providerstest.UpstreamError(t, resp, err, tc.kind, tc.status, d.AWS.SecretAccessKey)
			if n := len(srv.Calls()); n != 1 {
				t.Fatalf("%d calls: the SDK must not retry", n)
			}
		})
	}
}

// A stream broken after content: the content is read, then an error (the
// gateway ends the client's stream with an error event).
func TestStreamBrokenAfterContent(t *testing.T) {
	for _, f := range []bedrocktest.Fault{bedrocktest.BreakAfterContent, bedrocktest.CutAfterContent} {
		t.Run(string(f), func(t *testing.T) {
			srv, p, d := setup(t)
			srv.SetFault(f)
			resp, err := do(t, p, d, chat("", true), true)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			evs, err := chunkstest.Events(resp.Body)
			if err == nil || len(evs) < 2 || gjson.Get(evs[1], "choices.0.delta.content").String() != "Hello " {
				t.Fatalf("events %q, err %v", evs, err)
			}
		})
	}
}

func TestEmbeddings(t *testing.T) {
	srv, p, d := setup(t)
	for _, tc := range []struct{ model, body, want string }{
		{"amazon.titan-embed-text-v2:0", `{"model":"e","input":["hello world","hi"],"dimensions":2}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.11,0.12]},{"object":"embedding","index":1,"embedding":[0.02,0.03]}],"model":"amazon.titan-embed-text-v2:0","usage":{"prompt_tokens":3,"total_tokens":3}}`},
		{"cohere.embed-english-v3", `{"model":"e","input":"abc"}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.03,0.04,0.05]}],"model":"cohere.embed-english-v3"}`},
	} {
		d.Model = tc.model
		b := chunkstest.Body(t)(p.Do(context.Background(), d, wire.Call{Op: wire.OpEmbeddings, Body: []byte(tc.body)}))
		if string(b) != tc.want {
			t.Fatalf("%s:\n got  %s\n want %s", tc.model, b, tc.want)
		}
	}
	calls := srv.Calls()
	if len(calls) != 3 || gjson.Get(calls[0].Body, "inputText").String() != "hello world" || gjson.Get(calls[0].Body, "dimensions").Int() != 2 ||
		gjson.Get(calls[2].Body, "input_type").String() != "search_document" {
		t.Fatalf("calls %+v", calls)
	}
	// base64, as the OpenAI Python SDK asks by default: little-endian float32.
	d.Model = "amazon.titan-embed-text-v2:0"
	b := chunkstest.Body(t)(p.Do(context.Background(), d, wire.Call{Op: wire.OpEmbeddings, Body: []byte(`{"model":"e","input":"hi","dimensions":1,"encoding_format":"base64"}`)}))
	if got := gjson.GetBytes(b, "data.0.embedding").String(); got != "CtejPA==" { // float32(0.02)
		t.Fatalf("base64 embedding %s", b)
	}
	d.Model = "anthropic.claude-3-haiku-20240307-v1:0"
	_, err := p.Do(context.Background(), d, wire.Call{Op: wire.OpEmbeddings, Body: []byte(`{"model":"e","input":"hi"}`)})
	var e *apierr.Error
	if !errors.As(err, &e) || e.HTTPStatus() != 400 {
		t.Fatalf("a chat model for embeddings: %v", err)
	}
}

// response_format becomes the json_tool_call tool, forced (as for
// Anthropic, and in LiteLLM), but for thinking, which refuses a forced
// tool: the model's own tools are kept beside it.
func TestResponseFormatTool(t *testing.T) {
	const rf = `"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object","properties":{"city":{"type":"string"}}}}}`
	for _, tc := range []struct {
		name, extra, choice string
		tools               int
	}{
		{"alone", "", "json_tool_call", 1},
		{"beside a tool", `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto"`, "json_tool_call", 2},
		{"thinking", `,"reasoning_effort":"low"`, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := bedrock.TranslateRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],`+rf+tc.extra+`}`), modelID)
			if err != nil {
				t.Fatal(err)
			}
			tcfg := r.Input.ToolConfig
			if !r.JSONMode || tcfg == nil || len(tcfg.Tools) != tc.tools {
				t.Fatalf("json mode %v, tool config %+v", r.JSONMode, tcfg)
			}
			last := tcfg.Tools[len(tcfg.Tools)-1].(*types.ToolMemberToolSpec).Value
			if *last.Name != "json_tool_call" {
				t.Errorf("last tool %s", *last.Name)
			}
			got := ""
			if forced, ok := tcfg.ToolChoice.(*types.ToolChoiceMemberTool); ok {
				got = *forced.Value.Name
			}
			if got != tc.choice {
				t.Errorf("forced tool %q, want %q", got, tc.choice)
			}
		})
	}
}

// A system message among a Messages call's turns (Claude Code's reminders,
// mid-conversation) reaches Claude on Bedrock, which takes only user and
// assistant turns, in the top-level system after what it holds; the user
// turns around it are joined. Plain and streamed.
func TestMessagesInvokeMidConversationSystem(t *testing.T) {
	srv, p, d := setup(t)
	d.Model = modelID // InvokeModel, not Converse
	body := `{"model":"claude","max_tokens":10,"system":"top","messages":[
 {"role":"user","content":"hi"},
 {"role":"assistant","content":[{"type":"text","text":"hello"}]},
 {"role":"user","content":[{"type":"text","text":"go on"}]},
 {"role":"system","content":[{"type":"text","text":"<system-reminder>a</system-reminder>","cache_control":{"type":"ephemeral"}}]},
 {"role":"user","content":"and then"},
 {"role":"system","content":"be terse"}
]}`
	for _, stream := range []bool{false, true} {
		resp, err := p.Do(context.Background(), d, wire.Call{Op: wire.OpMessages, Body: []byte(body), Stream: stream})
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(out), "b1.") {
			t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, out)
		}
		calls := srv.Calls()
		sent := gjson.Parse(calls[len(calls)-1].Body)
		if got := sent.Get("system").Raw; got != `[{"type":"text","text":"top"},{"type":"text","text":"<system-reminder>a</system-reminder>","cache_control":{"type":"ephemeral"}},{"type":"text","text":"be terse"}]` {
			t.Errorf("stream %v: system %s", stream, got)
		}
		if got := sent.Get("messages.#.role").Raw; got != `["user","assistant","user"]` {
			t.Errorf("stream %v: roles %s", stream, got)
		}
		if got := sent.Get("messages.2.content.#.text").Raw; got != `["go on","and then"]` {
			t.Errorf("stream %v: joined user turn %s", stream, got)
		}
		if got := sent.Get("messages.0.content").Raw; got != `"hi"` {
			t.Errorf("stream %v: a turn left alone changed: %s", stream, got)
		}
	}
}

// Streams of one deployment at once share its client: each must decode
// its own events (the SDK's event-stream codec keeps a decoder and a
// payload buffer per protocol instance, which one client shares).
func TestConcurrentStreams(t *testing.T) {
	_, p, d := setup(t)
	const workers, each = 16, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("%02d-%02d-%s", w, i, strings.Repeat("x", 40*w+i))
				body := fmt.Sprintf(`{"model":"claude","stream":true,"messages":[
{"role":"user","content":"weather?"},
{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
{"role":"tool","tool_call_id":"call_1","content":%q}]}`, id)
				resp, err := do(t, p, d, body, true)
				if err != nil {
					errs <- err
					continue
				}
				evs, err := chunkstest.Events(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- fmt.Errorf("stream %s: %w", id, err)
					continue
				}
				if text, want := chunkstest.Deltas(evs, "content"), "It is "+id+" in Paris."; text != want {
					errs <- fmt.Errorf("stream got %q, want %q", text, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
