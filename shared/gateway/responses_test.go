package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
	sresponses "github.com/sluice-gw/sluice/shared/responses"
	"github.com/sluice-gw/sluice/shared/router"
)

// recorder keeps the bodies a fake upstream received.
type recorder struct{ bodies providerstest.Log[[]byte] }

func (r *recorder) add(req *http.Request) []byte {
	b, _ := io.ReadAll(req.Body)
	r.bodies.Add(b)
	return b
}

func (r *recorder) last(t *testing.T) []byte {
	t.Helper()
	return r.bodies.Last(t, "the upstream")
}

// fakeOpenAIResponses answers POST /v1/responses as OpenAI does: id
// resp_up1, then resp_up2...; streamed when asked.
func fakeOpenAIResponses(t *testing.T, rec *recorder) *httptest.Server {
	n := 0
	var mu sync.Mutex
	return gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		body := rec.add(r)
		if r.URL.Path != "/v1/responses" || r.Header.Get("Authorization") != "Bearer sk-upstream" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		mu.Lock()
		n++
		n := n
		mu.Unlock()
		id := "resp_up" + string(rune('0'+n))
		model := gjson.GetBytes(body, "model").Str
		prev := gjson.GetBytes(body, "previous_response_id").Raw
		if prev == "" {
			prev = "null"
		}
		usage := `{"input_tokens":12,"input_tokens_details":{"cached_tokens":4},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":17}`
		msg := `{"id":"msg_up","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello from OpenAI","annotations":[]}]}`
		obj := func(status, output, usage string) string {
			return `{"id":"` + id + `","object":"response","created_at":1700000000,"status":"` + status + `","model":"` + model + `","output":` + output + `,"previous_response_id":` + prev + `,"usage":` + usage + `}`
		}
		if !gjson.GetBytes(body, "stream").Bool() {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, obj("completed", "["+msg+"]", usage))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		seq := 0
		send := func(typ, rest string) {
			_, _ = io.WriteString(w, "event: "+typ+"\ndata: {\"type\":\""+typ+"\",\"sequence_number\":"+string(rune('0'+seq))+","+rest+"}\n\n")
			seq++
		}
		input := gjson.GetBytes(body, "input").Str
		if input == "fail first" && n == 1 { // an error before any output
			send("error", `"code":"server_error","message":"The server had an error","param":null`)
			return
		}
		send("response.created", `"response":`+obj("in_progress", "[]", "null"))
		send("response.output_item.added", `"output_index":0,"item":{"id":"msg_up","type":"message","status":"in_progress","role":"assistant","content":[]}`)
		send("response.output_text.delta", `"item_id":"msg_up","output_index":0,"content_index":0,"delta":"Hello from OpenAI"`)
		switch input {
		case "fail midway":
			send("response.failed", `"response":{"id":"`+id+`","status":"failed","error":{"code":"server_error","message":"bad key sk-upstream"},"output":[],"usage":null}`)
			return
		case "cut":
			return
		}
		send("response.output_item.done", `"output_index":0,"item":`+msg)
		send("response.completed", `"response":`+obj("completed", "["+msg+"]", usage))
	})
}

// fakeAnthropic answers POST /v1/messages with the recorded tool-use
// message or stream when the request has tools and no tool result yet,
// else with a short text.
func fakeAnthropic(t *testing.T, rec *recorder) *httptest.Server {
	toolMsg, _ := os.ReadFile("testdata/responses/anthropic_message_tool.json")
	toolStream, _ := os.ReadFile("testdata/responses/anthropic_stream_tool.sse")
	return gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		body := rec.add(r)
		if r.URL.Path != "/v1/messages" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		stream := gjson.GetBytes(body, "stream").Bool()
		tool := gjson.GetBytes(body, "tools").Exists() && !strings.Contains(string(body), `"tool_result"`)
		switch {
		case tool && stream:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(toolStream)
		case tool:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(toolMsg)
		case stream:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_a\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":20,\"output_tokens\":1}}}\n\n"+
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello \"}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"from Claude\"}}\n\n"+
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"+
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}\n\n"+
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"msg_b","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"The weather is sunny."}],"stop_reason":"end_turn","usage":{"input_tokens":30,"cache_creation_input_tokens":7,"cache_read_input_tokens":3,"output_tokens":6}}`)
		}
	})
}

const respMaster = "sk-master"

// respGateway is a gateway (local mode's parts: memory keys and limits)
// over a fake OpenAI and a fake Anthropic, storing responses in store.
type respGateway struct {
	url         string
	openai      *recorder
	anthropic   *recorder
	mu          sync.Mutex
	completions []*gateway.Completion
}

func respConfig(openaiURL, anthropicURL string) string {
	return `
model_list:
  - model_name: gpt-4o
    litellm_params: {model: openai/gpt-4o-2024-08-06, api_base: ` + openaiURL + `/v1, api_key: sk-upstream}
  - model_name: claude
    litellm_params: {model: anthropic/claude-sonnet-4-5, api_base: ` + anthropicURL + `, api_key: sk-ant-upstream}
general_settings:
  master_key: ` + respMaster + `
`
}

func respKeys(t *testing.T) *keys.Memory {
	ks := keys.NewMemory()
	ctx := context.Background()
	if err := ks.Teams().Create(ctx, keys.Team{ID: "t1"}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []keys.Key{
		{Hash: keys.HashSecret("sk-a"), TeamID: "t1"},
		{Hash: keys.HashSecret("sk-b"), TeamID: "t1"},
		{Hash: keys.HashSecret("sk-c")},
		{Hash: keys.HashSecret("sk-claude-only"), Settings: keys.Settings{Models: []string{"claude"}}},
		{Hash: keys.HashSecret("sk-one-rpm"), Settings: keys.Settings{RPMLimit: 1}},
	} {
		if err := ks.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	return ks
}

func newRespGateway(t *testing.T, store sresponses.Store, ks *keys.Memory, oa, an *httptest.Server, orec, arec *recorder) *respGateway {
	t.Helper()
	g := &respGateway{openai: orec, anthropic: arec}
	cfg, err := config.Load([]byte(respConfig(oa.URL, an.URL)), nil)
	if err != nil {
		t.Fatal(err)
	}
	log := gatewaytest.Quiet()
	client := providers.NewHTTPClient()
	t.Cleanup(client.CloseIdleConnections)
	h := gateway.New(gateway.Options{
		Config: cfg, Router: router.New(cfg, router.Options{Logger: log}), Provider: providers.New(client), Logger: log,
		Keys: ks, Limits: limits.NewMemory(), Responses: store,
		OnComplete: func(_ context.Context, c *gateway.Completion) {
			g.mu.Lock()
			g.completions = append(g.completions, c)
			g.mu.Unlock()
		},
	})
	g.url = gatewaytest.Upstream(t, h.ServeHTTP).URL
	return g
}

func startRespGateway(t *testing.T) *respGateway {
	orec, arec := &recorder{}, &recorder{}
	return newRespGateway(t, sresponses.NewMemory(), respKeys(t), fakeOpenAIResponses(t, orec), fakeAnthropic(t, arec), orec, arec)
}

// lastCompletion waits for the request's Completion (OnComplete runs as
// the handler returns, after the client has its response).
func (g *respGateway) lastCompletion(t *testing.T, n int) *gateway.Completion {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		if len(g.completions) >= n {
			c := g.completions[n-1]
			g.mu.Unlock()
			return c
		}
		g.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no completion #%d", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sdk returns the official client for key; sent receives each request
// body it sends.
func (g *respGateway) sdk(key string, sent *[]byte) openai.Client {
	opts := []option.RequestOption{option.WithBaseURL(g.url + "/v1"), option.WithAPIKey(key), option.WithMaxRetries(0)}
	if sent != nil {
		opts = append(opts, option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			if r.Body != nil {
				b, _ := io.ReadAll(r.Body)
				*sent = b
				r.Body = io.NopCloser(bytes.NewReader(b))
			}
			return next(r)
		}))
	}
	return openai.NewClient(opts...)
}

func apiError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *openai.Error", err, err)
	}
	return e
}

// say sends text to model through c, continuing prev when it is not "",
// and fails the test on an error.
func say(ctx context.Context, t *testing.T, c openai.Client, model, prev, text string) *responses.Response {
	t.Helper()
	p := responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}}
	if prev != "" {
		p.PreviousResponseID = openai.String(prev)
	}
	r, err := c.Responses.New(ctx, p)
	if err != nil {
		t.Fatalf("%s %q after %q: %v", model, text, prev, err)
	}
	return r
}

func respCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestResponsesPassThrough: to an OpenAI deployment the body arrives byte
// for byte as the SDK sent it but for the model; the answer comes back
// with a LiteLLM-style id naming the deployment; spend has the usage of
// the response (cached tokens included); the stored response reads back
// for the key and its team, and is a 404 for another key.
func TestResponsesPassThrough(t *testing.T) {
	g := startRespGateway(t)
	ctx := respCtx(t)
	var sent []byte
	client := g.sdk("sk-a", &sent)
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model:           "gpt-4o",
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")},
		Instructions:    openai.String("Be brief."),
		MaxOutputTokens: openai.Int(50),
		Metadata:        map[string]string{"session": "s1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "Hello from OpenAI" {
		t.Errorf("output %q", resp.OutputText())
	}
	want := bytes.Replace(sent, []byte(`"model":"gpt-4o"`), []byte(`"model":"gpt-4o-2024-08-06"`), 1)
	if got := g.openai.last(t); !bytes.Equal(got, want) || bytes.Equal(sent, want) {
		t.Errorf("upstream body\n%s\nwant\n%s", got, want)
	}
	d, ok := sresponses.DecodeID(resp.ID)
	if !ok || d.Provider != "openai" || d.Upstream != "resp_up1" || d.Deployment == "" {
		t.Fatalf("id %q decodes to %+v, %v", resp.ID, d, ok)
	}
	c := g.lastCompletion(t, 1)
	if c.Usage.PromptTokens != 12 || c.Usage.CompletionTokens != 5 || c.Usage.CachedTokens != 4 || c.UsageEstimated {
		t.Errorf("usage %+v (estimated %v), want 12 in (4 cached), 5 out", c.Usage, c.UsageEstimated)
	}
	if ev := c.SpendEvent(); ev.CallType != "responses" || ev.PromptTokens != 12 || ev.CachedTokens != 4 {
		t.Errorf("spend event %+v", ev)
	}

	mate := g.sdk("sk-b", nil)
	got, err := mate.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != "Hello from OpenAI" || got.ID != resp.ID {
		t.Fatalf("team mate's GET: %v %+v", err, got)
	}
	other := g.sdk("sk-c", nil)
	if _, err := other.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{}); apiError(t, err).StatusCode != 404 {
		t.Errorf("another key's GET: %v, want 404", err)
	}
	if err := other.Responses.Delete(ctx, resp.ID); apiError(t, err).StatusCode != 404 {
		t.Errorf("another key's DELETE: %v, want 404", err)
	}
	items, err := client.Responses.InputItems.List(ctx, resp.ID, responses.InputItemListParams{})
	if err != nil || len(items.Data) != 1 || items.Data[0].Role != "user" || items.Data[0].ID == "" {
		t.Fatalf("input items: %v %+v", err, items)
	}
	// A continuation goes to the deployment that holds the conversation,
	// with the provider's own id.
	next := say(ctx, t, client, "gpt-4o", resp.ID, "And again")
	if next.PreviousResponseID != resp.ID {
		t.Errorf("the continuation names previous_response_id %q, want the client's %q", next.PreviousResponseID, resp.ID)
	}
	if p := gjson.GetBytes(g.openai.last(t), "previous_response_id").Str; p != "resp_up1" {
		t.Errorf("upstream previous_response_id %q, want resp_up1", p)
	}
	if err := client.Responses.Delete(ctx, resp.ID); err != nil {
		t.Fatalf("DELETE by its key: %v", err)
	}
	if _, err := client.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{}); apiError(t, err).StatusCode != 404 {
		t.Errorf("GET after DELETE: %v, want 404", err)
	}
}

// TestResponsesPassThroughStream: OpenAI's events reach the client one by
// one, the response's id rewritten in each; usage is read from
// response.completed.
func TestResponsesPassThroughStream(t *testing.T) {
	g := startRespGateway(t)
	events, err := g.streamed(t, responses.ResponseNewParams{
		Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")},
	})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var text, id string
	for _, ev := range events {
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.created", "response.completed":
			if ev.Response.ID == "" || (id != "" && ev.Response.ID != id) {
				t.Errorf("%s: id %q (before: %q)", ev.Type, ev.Response.ID, id)
			}
			id = ev.Response.ID
		}
	}
	if text != "Hello from OpenAI" || len(types) != 5 || types[4] != "response.completed" {
		t.Errorf("text %q, events %v", text, types)
	}
	if d, ok := sresponses.DecodeID(id); !ok || d.Upstream != "resp_up1" {
		t.Errorf("id %q", id)
	}
	if c := g.lastCompletion(t, 1); c.Usage.PromptTokens != 12 || c.Usage.CompletionTokens != 5 || c.Usage.CachedTokens != 4 || !c.Stream {
		t.Errorf("usage %+v", c.Usage)
	}
	client := g.sdk("sk-a", nil)
	if _, err := client.Responses.Get(respCtx(t), id, responses.ResponseGetParams{}); err != nil {
		t.Errorf("GET of a streamed response: %v", err)
	}
}

var weatherTool = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
	Name:       "get_weather",
	Parameters: map[string]any{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}},
}}

// TestResponsesTranslatedTools: to Anthropic, a Responses request is
// translated (instructions as system, function tools, the output items
// back: reasoning, message, function_call); the tool's output sent with
// previous_response_id continues the conversation, the gateway sending
// Anthropic the whole exchange (the earlier turn from its store).
func TestResponsesTranslatedTools(t *testing.T) {
	g := startRespGateway(t)
	ctx := respCtx(t)
	client := g.sdk("sk-a", nil)
	first, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "claude", Instructions: openai.String("You are a weather bot."),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in SF?")},
		Tools: []responses.ToolUnionParam{weatherTool}, MaxOutputTokens: openai.Int(300),
	})
	if err != nil {
		t.Fatal(err)
	}
	up := g.anthropic.last(t)
	if gjson.GetBytes(up, "system").String() == "" || !strings.Contains(gjson.GetBytes(up, "system").Raw, "weather bot") ||
		gjson.GetBytes(up, "tools.0.name").Str != "get_weather" || gjson.GetBytes(up, "max_tokens").Int() != 300 {
		t.Errorf("anthropic request %s", up)
	}
	var kinds []string
	var call responses.ResponseFunctionToolCall
	for _, it := range first.Output {
		kinds = append(kinds, it.Type)
		if it.Type == "function_call" {
			call = it.AsFunctionCall()
		}
	}
	if strings.Join(kinds, ",") != "reasoning,message,function_call" || call.Name != "get_weather" ||
		call.CallID != "toolu_01A09q90qw90lq917835lq9" || !strings.Contains(call.Arguments, "San Francisco") {
		t.Fatalf("output %v, call %+v", kinds, call)
	}
	if first.Usage.InputTokens != 2095+1024 || first.Usage.OutputTokens != 503 || first.Usage.InputTokensDetails.CachedTokens != 1024 {
		t.Errorf("usage %+v", first.Usage)
	}
	out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"sky":"sunny"}`)
	out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	second, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "claude", PreviousResponseID: openai.String(first.ID), Tools: []responses.ToolUnionParam{weatherTool},
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			out,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if second.OutputText() != "The weather is sunny." {
		t.Errorf("second output %q", second.OutputText())
	}
	up = g.anthropic.last(t)
	msgs := gjson.GetBytes(up, "messages")
	if n := len(msgs.Array()); n != 3 || msgs.Get("0.role").Str != "user" || msgs.Get("1.content.#(type==\"tool_use\").id").Str != call.CallID ||
		msgs.Get("2.content.0.type").Str != "tool_result" || msgs.Get("2.content.0.tool_use_id").Str != call.CallID {
		t.Errorf("continuation's messages %s", msgs.Raw)
	}
	// Anthropic's cache reads and writes reach spend, priced apart.
	if c := g.lastCompletion(t, 2); c.Usage.PromptTokens != 40 || c.Usage.CompletionTokens != 6 || c.Usage.CachedTokens != 3 || c.Usage.CacheCreationTokens != 7 {
		t.Errorf("second usage %+v", c.Usage)
	}
}

// TestResponsesTranslatedStream: Anthropic's stream becomes the Responses
// event sequence, numbered from 0, ending with response.completed and its
// usage.
func TestResponsesTranslatedStream(t *testing.T) {
	g := startRespGateway(t)
	events, err := g.streamed(t, responses.ResponseNewParams{
		Model: "claude", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in SF?")},
		Tools: []responses.ToolUnionParam{weatherTool},
	})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var args string
	var seq int64
	var done responses.Response
	for _, ev := range events {
		if ev.SequenceNumber != seq {
			t.Errorf("event %s has sequence_number %d, want %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq++
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.function_call_arguments.done":
			args = ev.Arguments
		case "response.completed":
			done = ev.Response
		}
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Errorf("events\n%v\nwant\n%v", types, want)
	}
	if args != `{"location": "San Francisco, CA"}` {
		t.Errorf("arguments %q", args)
	}
	if done.Usage.InputTokens != 472 || done.Usage.OutputTokens != 89 || done.Status != "completed" {
		t.Errorf("completed %+v", done.Usage)
	}
	if c := g.lastCompletion(t, 1); c.Usage.PromptTokens != 472 || c.Usage.CompletionTokens != 89 {
		t.Errorf("spend usage %+v", c.Usage)
	}
	mate := g.sdk("sk-b", nil)
	if _, err := mate.Responses.Get(respCtx(t), done.ID, responses.ResponseGetParams{}); err != nil {
		t.Errorf("GET by a team mate: %v", err)
	}
}

// TestResponsesErrors: the gateway's refusals reach the SDK as OpenAI
// errors.
func TestResponsesErrors(t *testing.T) {
	g := startRespGateway(t)
	ctx := respCtx(t)
	in := responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}
	for _, tc := range []struct {
		name   string
		key    string
		params responses.ResponseNewParams
		status int
	}{
		{"bad key", "sk-nope", responses.ResponseNewParams{Model: "claude", Input: in}, 401},
		{"model not allowed", "sk-claude-only", responses.ResponseNewParams{Model: "gpt-4o", Input: in}, 403},
		{"unknown model", "sk-a", responses.ResponseNewParams{Model: "nope", Input: in}, 404},
		{"unknown previous response", "sk-a", responses.ResponseNewParams{Model: "claude", Input: in, PreviousResponseID: openai.String("resp_nope")}, 404},
		{"rpm", "sk-one-rpm", responses.ResponseNewParams{Model: "claude", Input: in}, 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := g.sdk(tc.key, nil)
			_, err := client.Responses.New(ctx, tc.params)
			if tc.status == 429 { // the first request is admitted
				if err != nil {
					t.Fatal(err)
				}
				_, err = client.Responses.New(ctx, tc.params)
			}
			if e := apiError(t, err); e.StatusCode != tc.status {
				t.Errorf("status %d, want %d: %s", e.StatusCode, tc.status, e.RawJSON())
			}
		})
	}
	// Another key cannot continue a conversation it does not own.
	owner, other := g.sdk("sk-a", nil), g.sdk("sk-c", nil)
	resp, err := owner.Responses.New(ctx, responses.ResponseNewParams{Model: "claude", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Responses.New(ctx, responses.ResponseNewParams{Model: "claude", Input: in, PreviousResponseID: openai.String(resp.ID)})
	if e := apiError(t, err); e.StatusCode != 404 || e.Code != "previous_response_not_found" {
		t.Errorf("another key's continuation: %d %s", e.StatusCode, e.RawJSON())
	}
}

// TestResponsesStoreFalse: Codex's requests (store: false, include
// reasoning.encrypted_content) are served and nothing is kept.
func TestResponsesStoreFalse(t *testing.T) {
	g := startRespGateway(t)
	ctx := respCtx(t)
	client := g.sdk("sk-a", nil)
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "claude", Store: openai.Bool(false),
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
		Input:   responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "The weather is sunny." || gjson.Get(resp.RawJSON(), "store").Type != gjson.False {
		t.Errorf("response %s", resp.RawJSON())
	}
	if _, err := client.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{}); apiError(t, err).StatusCode != 404 {
		t.Errorf("GET of a store:false response: %v, want 404", err)
	}
}
