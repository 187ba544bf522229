package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/providers/vertex/vertextest"
)

// Claude on Vertex AI through the gateway: chat completions and Responses
// translated, the Messages API passed through, spend priced from the
// table's vertex_ai/ entry. The fake Vertex AI checks the bearer token the
// fake token endpoint issued (after verifying the JWT's signature), the
// rawPredict / streamRawPredict URL and the body (Vertex's
// anthropic_version, no model), then answers as the fake Anthropic API.

const vertexClaude = "claude-sonnet-4-5@20250929"

type vertexCall struct {
	path, query, beta string
	body              gjson.Result
}

func vertexFixture(t *testing.T) (*messagesFixture, *vertextest.Account, *[]vertexCall) {
	t.Helper()
	acct := vertextest.NewAccount(t)
	claude := newFakeClaude(t)
	var calls []vertexCall
	prefix := "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/" + vertexClaude
	fake := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body := gjson.ParseBytes(b)
		calls = append(calls, vertexCall{path: r.URL.Path, query: r.URL.RawQuery, beta: r.Header.Get("Anthropic-Beta"), body: body})
		if !acct.Authorized(r) {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`)
			return
		}
		method, ok := strings.CutPrefix(r.URL.Path, prefix+":")
		if !ok || (method != "rawPredict" && method != "streamRawPredict") || (method == "streamRawPredict") != body.Get("stream").Bool() ||
			body.Get("model").Exists() || body.Get("anthropic_version").Str != "vertex-2023-10-16" {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"code":400,"message":"bad Vertex request","status":"INVALID_ARGUMENT"}}`)
			return
		}
		// The fake Anthropic API answers it, as Claude on Vertex does.
		b, _ = sjson.DeleteBytes(b, "anthropic_version")
		b, _ = sjson.SetBytes(b, "model", vertexClaude)
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(bytes.NewReader(b))
		r2.URL.Path = "/v1/messages"
		r2.Header.Set("X-Api-Key", "sk-ant-fake")
		claude.serve(w, r2)
	})
	f := newMessagesFixture(t, `  - model_name: claude-vertex
    litellm_params:
      model: vertex_ai/`+vertexClaude+`
      api_base: `+fake.URL+prefix+`
      vertex_project: p1
      vertex_location: us-east5
      vertex_credentials: '`+acct.JSON+`'`)
	return f, acct, &calls
}

func TestVertexClaudeThroughGateway(t *testing.T) {
	f, acct, calls := vertexFixture(t)
	last := func() vertexCall { return (*calls)[len(*calls)-1] }
	price, ok := pricing.Default().Get("vertex_ai/" + vertexClaude)
	if !ok {
		t.Fatal("no price for vertex_ai/" + vertexClaude)
	}

	// Chat completions, translated.
	resp := f.post(t, "/v1/chat/completions", "sk-master", `{"model":"claude-vertex","messages":[{"role":"user","content":"hi"}],"max_tokens":50}`)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || gjson.GetBytes(b, "choices.0.message.content").Str != "Hello from Claude." {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if c := last(); c.query != "" || !strings.HasSuffix(c.path, ":rawPredict") || c.body.Get("max_tokens").Int() != 50 {
		t.Errorf("chat call %+v", c)
	}
	comp := f.completion(t)
	if comp.Usage.PromptTokens != 32 || comp.Usage.CompletionTokens != 6 || !comp.CostKnown || comp.CostNanos == 0 || comp.CostNanos != price.CostNanos(comp.Usage) {
		t.Errorf("spend: usage %+v cost %d known %v (table %+v)", comp.Usage, comp.CostNanos, comp.CostKnown, price)
	}

	// Streamed chat: streamRawPredict with alt=sse (api_base is a custom
	// base, as LiteLLM sends it), OpenAI chunks back.
	resp = f.post(t, "/v1/chat/completions", "sk-master", `{"model":"claude-vertex","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"content":"Hello "`) || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if c := last(); c.query != "alt=sse" || !strings.HasSuffix(c.path, ":streamRawPredict") {
		t.Errorf("stream call %+v", c)
	}
	if comp := f.completion(t); comp.Usage.CompletionTokens != 6 || comp.CostNanos != price.CostNanos(comp.Usage) {
		t.Errorf("stream spend %+v %d", comp.Usage, comp.CostNanos)
	}

	// Tools through chat.
	resp = f.post(t, "/v1/chat/completions", "sk-master", `{"model":"claude-vertex","messages":[{"role":"user","content":"weather?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}]}`)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || gjson.GetBytes(b, "choices.0.message.tool_calls.0.function.arguments").Str != `{"location":"Paris"}` {
		t.Fatalf("tools: %d %s", resp.StatusCode, b)
	}
	f.completion(t)

	// Responses, translated through chat.
	resp = f.post(t, "/v1/responses", "sk-master", `{"model":"claude-vertex","input":"hi","store":false}`)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || gjson.GetBytes(b, "object").Str != "response" || !strings.Contains(string(b), "Hello from Claude.") {
		t.Fatalf("responses: %d %s", resp.StatusCode, b)
	}
	f.completion(t)

	// The Messages API, passed through: the client's body (thinking and
	// all) without model, the anthropic-beta header kept.
	c := f.client("sk-master")
	p := userText("claude-vertex", "think")
	m, err := c.Messages.New(context.Background(), p, option.WithHeader("anthropic-beta", "context-1m-2025-08-07"))
	if err != nil {
		t.Fatal(err)
	}
	if textOf(m) != "Hello from Claude." || m.Usage.CacheReadInputTokens != 8 {
		t.Errorf("message %s", m.RawJSON())
	}
	if c := last(); c.beta != "context-1m-2025-08-07" || c.body.Get("messages.0.content.0.text").Str != "think" || c.body.Get("max_tokens").Int() != 100 {
		t.Errorf("messages call %+v", c)
	}
	if comp := f.completion(t); comp.CostNanos != price.CostNanos(comp.Usage) || comp.CostNanos == 0 {
		t.Errorf("messages spend %+v %d", comp.Usage, comp.CostNanos)
	}
	sm, _ := stream(t, c, userText("claude-vertex", "hi"))
	if textOf(sm) != "Hello from Claude." {
		t.Errorf("streamed message %+v", sm.Content)
	}
	f.completion(t)
	if acct.Exchanges() != 1 || len(acct.Refused()) != 0 {
		t.Errorf("exchanges %d, refused %v", acct.Exchanges(), acct.Refused())
	}
}

// A refused token exchange through the gateway: a 502 that quotes neither
// the key nor the signed assertion (Vertex's own statuses are classified in
// the vertex package's TestErrors).
func TestVertexErrorsThroughGateway(t *testing.T) {
	f, acct, _ := vertexFixture(t)
	acct.Fail(400, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
	resp := f.post(t, "/v1/chat/completions", "sk-master", `{"model":"claude-vertex","messages":[{"role":"user","content":"hi"}]}`)
	b, _ := io.ReadAll(resp.Body)
	msg, _, _ := openAIError(t, string(b))
	if resp.StatusCode != 502 || !strings.Contains(msg, "token endpoint refused") || strings.Contains(string(b), "PRIVATE KEY") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	for _, a := range acct.Assertions() {
		if strings.Contains(string(b), a) {
			t.Error("the answer quotes the signed assertion")
		}
	}
}
