package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

func ptr(s string) *string { return &s }

func read(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if resp.ContentLength != int64(len(b)) {
		t.Errorf("ContentLength = %d, body has %d bytes", resp.ContentLength, len(b))
	}
	return b
}

func TestRespondInjectedErrors(t *testing.T) {
	tests := []struct {
		mock   string
		status int
		code   string
		msg    string
	}{
		{"litellm.RateLimitError", 429, "rate_limit_exceeded", "mock rate limit"},
		{"litellm.InternalServerError", 500, "server_error", "mock internal server error"},
		{"litellm.ServiceUnavailableError", 503, "service_unavailable", "mock service unavailable"},
		{"litellm.Timeout", 408, "timeout", "mock timeout"},
		{"litellm.APIConnectionError", 502, "connection_error", "mock connection error"},
		{"litellm.BadRequestError", 400, "invalid_request", "mock bad request"},
		{"litellm.AuthenticationError", 401, "invalid_api_key", "mock authentication error"},
		{"litellm.NotFoundError", 404, "model_not_found", "mock not found"},
		{"litellm.ContextWindowExceededError", 400, "context_length_exceeded", "This model's maximum context length is exceeded (mock)"},
		{"litellm.ContentPolicyViolationError", 400, "content_filter", "mock content policy violation"},
		{" litellm.RateLimitError\n", 429, "rate_limit_exceeded", "mock rate limit"},
	}
	if len(tests)-1 != len(injected) {
		t.Fatalf("the table covers %d errors, the mock knows %d", len(tests)-1, len(injected))
	}
	for _, tt := range tests {
		t.Run(strings.TrimSpace(tt.mock), func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				d := &config.Deployment{ID: "d1", Model: "gpt-4o", Protocol: config.ProtocolMock, MockResponse: ptr(tt.mock)}
				resp := Respond(context.Background(), d, wire.Call{Op: wire.OpChat, Body: []byte(`{"model":"gpt-4o"}`), Stream: stream})
				if resp.StatusCode != tt.status {
					t.Errorf("stream=%v: status = %d, want %d", stream, resp.StatusCode, tt.status)
				}
				if want := strconv.Itoa(tt.status) + " " + http.StatusText(tt.status); resp.Status != want {
					t.Errorf("Status = %q, want %q", resp.Status, want)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
				want := map[string]any{"error": map[string]any{"message": tt.msg, "type": "mock_error", "param": nil, "code": tt.code}}
				var got map[string]any
				if err := json.Unmarshal(read(t, resp), &got); err != nil {
					t.Fatalf("body: %v", err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("body = %v, want %v", got, want)
				}
			}
		})
	}
}

type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int            `json:"index"`
		FinishReason *string        `json:"finish_reason"`
		Message      map[string]any `json:"message"`
		Delta        map[string]any `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	} `json:"usage"`
}

func TestRespondReply(t *testing.T) {
	tests := []struct {
		name       string
		d          config.Deployment
		callMock   *string
		wantReply  string
		completion int64
	}{
		{
			name:      "default reply",
			d:         config.Deployment{ID: "d1", Model: "gpt-4o", Protocol: config.ProtocolMock},
			wantReply: "This is a mock response from gpt-4o (deployment d1).", completion: 9,
		},
		{
			name:      "configured reply",
			d:         config.Deployment{ID: "d1", Model: "gpt-4o", Protocol: config.ProtocolMock, MockResponse: ptr("Hello there, \"friend\" ✓")},
			wantReply: "Hello there, \"friend\" ✓", completion: 4,
		},
		{
			name:      "per-request reply overrides on a mock deployment",
			d:         config.Deployment{ID: "d1", Model: "gpt-4o", Protocol: config.ProtocolMock, MockResponse: ptr("configured")},
			callMock:  ptr("from the request"),
			wantReply: "from the request", completion: 3,
		},
		{
			name:      "per-request reply ignored on a real deployment",
			d:         config.Deployment{ID: "d2", Model: "gpt-4o", Protocol: config.ProtocolOpenAI, MockResponse: ptr("configured")},
			callMock:  ptr("litellm.RateLimitError"),
			wantReply: "configured", completion: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call := wire.Call{Op: wire.OpChat, Body: []byte(`{"model":"x"}`), PromptTokens: 11, MockResponse: tt.callMock}
			resp := Respond(context.Background(), &tt.d, call)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("response = %d %q, want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			var c completion
			if err := json.Unmarshal(read(t, resp), &c); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(c.ID, "chatcmpl-mock-") || c.Object != "chat.completion" || c.Model != tt.d.Model || c.Created <= 0 {
				t.Errorf("envelope = id %q object %q model %q created %d", c.ID, c.Object, c.Model, c.Created)
			}
			if len(c.Choices) != 1 {
				t.Fatalf("%d choices, want 1", len(c.Choices))
			}
			ch := c.Choices[0]
			wantMsg := map[string]any{"role": "assistant", "content": tt.wantReply}
			if ch.Index != 0 || ch.FinishReason == nil || *ch.FinishReason != "stop" || !reflect.DeepEqual(ch.Message, wantMsg) {
				t.Errorf("choice = %+v, want index 0, finish_reason stop, message %v", ch, wantMsg)
			}
			if c.Usage == nil || c.Usage.PromptTokens != 11 || c.Usage.CompletionTokens != tt.completion || c.Usage.TotalTokens != 11+tt.completion {
				t.Errorf("usage = %+v, want 11 + %d", c.Usage, tt.completion)
			}
		})
	}
}

func TestRespondIDsAreUnique(t *testing.T) {
	d := &config.Deployment{ID: "d1", Model: "m", Protocol: config.ProtocolMock}
	seen := map[string]bool{}
	for range 50 {
		var c completion
		if err := json.Unmarshal(read(t, Respond(context.Background(), d, wire.Call{})), &c); err != nil {
			t.Fatal(err)
		}
		if seen[c.ID] {
			t.Fatalf("id %q repeated", c.ID)
		}
		seen[c.ID] = true
	}
}

func TestRespondCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := &config.Deployment{ID: "d1", Model: "m", Protocol: config.ProtocolMock}
	resp := Respond(ctx, d, wire.Call{Op: wire.OpChat})
	if resp.StatusCode != 408 {
		t.Errorf("status = %d, want 408", resp.StatusCode)
	}
	if got, want := string(read(t, resp)), `{"error":{"message":"request cancelled","code":"timeout"}}`; got != want {
		t.Errorf("body = %s, want %s", got, want)
	}
}

// events splits an SSE body into its data payloads, checking the framing.
func events(t *testing.T, b []byte) []string {
	t.Helper()
	if !bytes.HasSuffix(b, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", b)
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("malformed event %q", ev)
		}
		out = append(out, data)
	}
	return out
}

func TestRespondStream(t *testing.T) {
	tests := []struct {
		name         string
		body         string
		reply        string
		wantDeltas   []string
		includeUsage bool
	}{
		{"without usage", `{"model":"m","stream":true}`, "hello mock world", []string{"hello ", "mock ", "world"}, false},
		{"include_usage false", `{"stream":true,"stream_options":{"include_usage":false}}`, "one", []string{"one"}, false},
		{"with usage", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, "a b", []string{"a ", "b"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &config.Deployment{ID: "d1", Model: "gpt-4o", Protocol: config.ProtocolMock, MockResponse: ptr(tt.reply)}
			resp := Respond(context.Background(), d, wire.Call{Op: wire.OpChat, Body: []byte(tt.body), Stream: true, PromptTokens: 5})
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("response = %d %q, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			evs := events(t, read(t, resp))
			want := 1 + len(tt.wantDeltas) + 1 + 1 // role, words, finish, [DONE]
			if tt.includeUsage {
				want++
			}
			if len(evs) != want {
				t.Fatalf("%d events, want %d: %q", len(evs), want, evs)
			}
			if evs[len(evs)-1] != "[DONE]" {
				t.Errorf("last event = %q, want [DONE]", evs[len(evs)-1])
			}
			var chunks []completion
			for _, e := range evs[:len(evs)-1] {
				var c completion
				if err := json.Unmarshal([]byte(e), &c); err != nil {
					t.Fatalf("event %q: %v", e, err)
				}
				if c.Object != "chat.completion.chunk" || c.Model != "gpt-4o" {
					t.Errorf("chunk object %q model %q", c.Object, c.Model)
				}
				chunks = append(chunks, c)
			}
			id := chunks[0].ID
			for i, c := range chunks {
				if c.ID != id {
					t.Errorf("chunk %d id %q, want %q", i, c.ID, id)
				}
			}
			if got := chunks[0].Choices[0].Delta; !reflect.DeepEqual(got, map[string]any{"role": "assistant", "content": ""}) {
				t.Errorf("first delta = %v", got)
			}
			var text strings.Builder
			for i, w := range tt.wantDeltas {
				c := chunks[1+i]
				if c.Usage != nil || c.Choices[0].FinishReason != nil {
					t.Errorf("content chunk %d has usage or a finish reason", i)
				}
				if got := c.Choices[0].Delta; !reflect.DeepEqual(got, map[string]any{"content": w}) {
					t.Errorf("delta %d = %v, want content %q", i, got, w)
				}
				text.WriteString(w)
			}
			if text.String() != tt.reply {
				t.Errorf("streamed text = %q, want %q", text.String(), tt.reply)
			}
			fin := chunks[1+len(tt.wantDeltas)]
			if fr := fin.Choices[0].FinishReason; fr == nil || *fr != "stop" || len(fin.Choices[0].Delta) != 0 {
				t.Errorf("finish chunk = %+v", fin.Choices[0])
			}
			if !tt.includeUsage {
				return
			}
			u := chunks[len(chunks)-1]
			completionTokens := int64(len(tt.wantDeltas))
			if len(u.Choices) != 0 || u.Usage == nil || u.Usage.PromptTokens != 5 || u.Usage.CompletionTokens != completionTokens || u.Usage.TotalTokens != 5+completionTokens {
				t.Errorf("usage chunk = %s, want no choices and usage 5 + %d", evs[len(evs)-2], completionTokens)
			}
			if got, ok := wire.UsageOf([]byte(evs[len(evs)-2])); !ok || got.TotalTokens != 5+completionTokens {
				t.Errorf("wire.UsageOf(usage chunk) = %+v, %v", got, ok)
			}
		})
	}
}

type embeddingList struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Usage map[string]int64 `json:"usage"`
}

func embed(t *testing.T, body string) embeddingList {
	t.Helper()
	d := &config.Deployment{ID: "e1", Model: "text-embedding-3-small", Protocol: config.ProtocolMock}
	resp := Respond(context.Background(), d, wire.Call{Op: wire.OpEmbeddings, Body: []byte(body), PromptTokens: 9})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("response = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var l embeddingList
	if err := json.Unmarshal(read(t, resp), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestEmbeddings(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		count int
		dims  int
	}{
		{"one string", `{"input":"hello"}`, 1, 8},
		{"three strings", `{"input":["a","b","c"]}`, 3, 8},
		{"dimensions honoured", `{"input":["a","b"],"dimensions":3}`, 2, 3},
		{"one dimension", `{"input":"a","dimensions":1}`, 1, 1},
		{"many dimensions", `{"input":"a","dimensions":1536}`, 1, 1536},
		{"4096 dimensions", `{"input":"a","dimensions":4096}`, 1, 4096},
		{"too many dimensions fall back", `{"input":"a","dimensions":4097}`, 1, 8},
		{"zero dimensions fall back", `{"input":"a","dimensions":0}`, 1, 8},
		{"negative dimensions fall back", `{"input":"a","dimensions":-3}`, 1, 8},
		{"token arrays", `{"input":[[1,2,3],[4,5]]}`, 2, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := embed(t, tt.body)
			if l.Object != "list" || l.Model != "text-embedding-3-small" {
				t.Errorf("object %q model %q", l.Object, l.Model)
			}
			if want := map[string]int64{"prompt_tokens": 9, "total_tokens": 9}; !reflect.DeepEqual(l.Usage, want) {
				t.Errorf("usage = %v, want %v", l.Usage, want)
			}
			if len(l.Data) != tt.count {
				t.Fatalf("%d embeddings, want %d", len(l.Data), tt.count)
			}
			for i, e := range l.Data {
				if e.Object != "embedding" || e.Index != i || len(e.Embedding) != tt.dims {
					t.Errorf("data[%d] = object %q index %d dims %d, want embedding %d %d", i, e.Object, e.Index, len(e.Embedding), i, tt.dims)
				}
				var sum float64
				for _, x := range e.Embedding {
					sum += x * x
				}
				if math.Abs(math.Sqrt(sum)-1) > 1e-9 {
					t.Errorf("data[%d] has norm %v, want 1", i, math.Sqrt(sum))
				}
			}
		})
	}
}

func TestEmbeddingsDeterministic(t *testing.T) {
	a := embed(t, `{"input":["same","other","same"],"dimensions":16}`)
	b := embed(t, `{"model":"x","input":"same","dimensions":16}`)
	c := embed(t, `{"input":"same","dimensions":16}`)
	if !reflect.DeepEqual(a.Data[0].Embedding, a.Data[2].Embedding) {
		t.Error("the same input in one request got different vectors")
	}
	if !reflect.DeepEqual(a.Data[0].Embedding, b.Data[0].Embedding) || !reflect.DeepEqual(b.Data[0].Embedding, c.Data[0].Embedding) {
		t.Error("the same input in different requests got different vectors")
	}
	if reflect.DeepEqual(a.Data[0].Embedding, a.Data[1].Embedding) {
		t.Error("different inputs got the same vector")
	}
}

// TestEmbeddingsGolden pins one vector, so that a per-process seed or a
// changed derivation (which would move every stored demo vector) shows.
func TestEmbeddingsGolden(t *testing.T) {
	want := []float64{0.20265027199501534, -0.7802501611172027, 0.5917284456039995}
	got := embed(t, `{"input":"hello","dimensions":3}`).Data[0].Embedding
	if len(got) != len(want) {
		t.Fatalf("embedding = %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("embedding = %v, want %v", got, want)
		}
	}
}

func TestEmbeddingsInputs(t *testing.T) {
	for _, tt := range []struct {
		body string
		n    int
	}{
		{`{"input":[1,2,3]}`, 1}, // one input as tokens
		{`{"input":[[1,2],[3]]}`, 2},
		{`{"input":["a","b","c"]}`, 3},
		{`{"input":"a"}`, 1},
	} {
		if got := len(embed(t, tt.body).Data); got != tt.n {
			t.Errorf("%s: %d embeddings, want %d", tt.body, got, tt.n)
		}
	}
	a := embed(t, `{"input":"hello","dimensions":16}`).Data[0].Embedding
	b := embed(t, `{"input":"hell\u006f","dimensions":16}`).Data[0].Embedding
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("the same text escaped differently got another vector")
		}
	}
	for i := 0; i+8 < len(a); i++ {
		if a[i] == a[i+8] && a[i+1] == a[i+9] {
			t.Fatalf("vector repeats: %v", a)
		}
	}
}
