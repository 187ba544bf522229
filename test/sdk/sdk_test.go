package sdk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// newClient returns an SDK client for s. Retries are off: every test sees
// exactly the gateway's answer, at once.
func newClient(s *server, opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(s.base + "/v1/"),
		option.WithAPIKey("sk-test-client"),
		option.WithMaxRetries(0),
	}
	return openai.NewClient(append(base, opts...)...)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func chatParams(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are a helpful assistant."),
			openai.UserMessage("Say hello in one short sentence."),
		},
		MaxTokens: openai.Int(64),
	}
}

func TestChatCompletion(t *testing.T) {
	tests := []struct {
		model     string
		wantGroup string
	}{
		{"gpt-4o-mini", "gpt-4o-mini"},
		{"gpt-4o", "gpt-4o"},
		{"default", "gpt-4o-mini"}, // model_group_alias
	}
	client := newClient(defaultServer)
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			var raw *http.Response
			resp, err := client.Chat.Completions.New(testContext(t), chatParams(tt.model), option.WithResponseInto(&raw))
			if err != nil {
				t.Fatalf("chat completion: %v", err)
			}
			if got := raw.Header.Get("X-Litellm-Model-Group"); got != tt.wantGroup {
				t.Errorf("x-litellm-model-group = %q, want %q", got, tt.wantGroup)
			}
			if !strings.HasPrefix(resp.ID, "chatcmpl-") {
				t.Errorf("id = %q, want a chatcmpl- id", resp.ID)
			}
			if len(resp.Choices) != 1 {
				t.Fatalf("choices = %d, want 1", len(resp.Choices))
			}
			c := resp.Choices[0]
			wantPrefix := "This is a mock response from " + tt.wantGroup
			if !strings.HasPrefix(c.Message.Content, wantPrefix) {
				t.Errorf("content = %q, want prefix %q", c.Message.Content, wantPrefix)
			}
			if c.Message.Role != "assistant" || c.FinishReason != "stop" {
				t.Errorf("role, finish_reason = %q, %q; want assistant, stop", c.Message.Role, c.FinishReason)
			}
			u := resp.Usage
			if u.PromptTokens <= 0 || u.CompletionTokens != int64(len(strings.Fields(c.Message.Content))) ||
				u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Errorf("usage = %+v, want prompt > 0, completion = words of the reply, total = sum", u)
			}
		})
	}
}

// tap keeps the raw bytes of every response body the client reads.
type tap struct {
	mu     sync.Mutex
	bodies []*bytes.Buffer
	header http.Header
}

func (tp *tap) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err != nil {
		return resp, err
	}
	buf := &bytes.Buffer{}
	tp.mu.Lock()
	tp.bodies = append(tp.bodies, buf)
	tp.header = resp.Header.Clone()
	tp.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, &lockedWriter{mu: &tp.mu, w: buf}), resp.Body}
	return resp, nil
}

func (tp *tap) raw() string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.bodies) != 1 {
		return ""
	}
	return tp.bodies[0].String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestChatCompletionStream(t *testing.T) {
	tests := []struct {
		name         string
		includeUsage bool
	}{
		{"without usage", false},
		{"with include_usage", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := &tap{}
			client := newClient(defaultServer, option.WithMiddleware(tp.middleware))
			params := chatParams("gpt-4o-mini")
			if tt.includeUsage {
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			}
			stream := client.Chat.Completions.NewStreaming(testContext(t), params)
			defer stream.Close()
			var acc openai.ChatCompletionAccumulator
			var deltas strings.Builder
			chunks, usageChunks := 0, 0
			for stream.Next() {
				chunk := stream.Current()
				chunks++
				if !acc.AddChunk(chunk) {
					t.Fatalf("chunk %d was not accepted by the accumulator: %s", chunks, chunk.RawJSON())
				}
				for _, c := range chunk.Choices {
					deltas.WriteString(c.Delta.Content)
				}
				if chunk.JSON.Usage.Valid() && chunk.Usage.TotalTokens > 0 {
					usageChunks++
					if len(chunk.Choices) != 0 {
						t.Errorf("usage chunk has %d choices, want 0", len(chunk.Choices))
					}
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			if ct := tp.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("content-type = %q, want text/event-stream", ct)
			}
			raw := tp.raw()
			if !strings.HasSuffix(raw, "data: [DONE]\n\n") {
				t.Errorf("stream did not end with data: [DONE]; last bytes: %q", tail(raw, 120))
			}
			if chunks < 3 {
				t.Errorf("got %d chunks, want a streamed reply (role, content..., finish)", chunks)
			}
			if len(acc.Choices) != 1 {
				t.Fatalf("accumulated choices = %d, want 1", len(acc.Choices))
			}
			content := acc.Choices[0].Message.Content
			if !strings.HasPrefix(content, "This is a mock response from gpt-4o-mini") || content != deltas.String() {
				t.Errorf("accumulated content = %q, deltas = %q; want the mock reply in both", content, deltas.String())
			}
			if fr := acc.Choices[0].FinishReason; fr != "stop" {
				t.Errorf("finish_reason = %q, want stop", fr)
			}
			switch {
			case tt.includeUsage && (usageChunks != 1 || acc.Usage.TotalTokens <= 0):
				t.Errorf("include_usage: %d usage chunks, accumulated usage %+v; want one chunk with usage", usageChunks, acc.Usage)
			case !tt.includeUsage && strings.Contains(raw, `"usage":{`):
				// The gateway asks the upstream for usage (for accounting) but
				// must not forward the chunk the client did not ask for.
				t.Errorf("a usage chunk reached a client that did not ask for it:\n%s", raw)
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func TestEmbeddings(t *testing.T) {
	tests := []struct {
		name     string
		input    openai.EmbeddingNewParamsInputUnion
		dims     int64
		wantN    int
		wantDims int
	}{
		{"one string", openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello world")}, 0, 1, 8},
		{"two strings with dimensions", openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello", "world"}}, 16, 2, 16},
	}
	client := newClient(defaultServer)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := openai.EmbeddingNewParams{Model: "text-embedding-3-small", Input: tt.input}
			if tt.dims > 0 {
				params.Dimensions = openai.Int(tt.dims)
			}
			resp, err := client.Embeddings.New(testContext(t), params)
			if err != nil {
				t.Fatalf("embeddings: %v", err)
			}
			if len(resp.Data) != tt.wantN {
				t.Fatalf("data = %d embeddings, want %d", len(resp.Data), tt.wantN)
			}
			for i, e := range resp.Data {
				if e.Index != int64(i) || len(e.Embedding) != tt.wantDims {
					t.Errorf("data[%d]: index %d, %d dims; want index %d, %d dims", i, e.Index, len(e.Embedding), i, tt.wantDims)
				}
			}
			if tt.wantN == 2 && slices.Equal(resp.Data[0].Embedding, resp.Data[1].Embedding) {
				t.Errorf("different inputs got the same vector")
			}
			if resp.Usage.PromptTokens <= 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens {
				t.Errorf("usage = %+v, want prompt tokens > 0 and total = prompt", resp.Usage)
			}
		})
	}
}

func TestModels(t *testing.T) {
	client := newClient(defaultServer)
	page, err := client.Models.List(testContext(t))
	if err != nil {
		t.Fatalf("models: %v", err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy == "" {
			t.Errorf("model %q: object %q, owned_by %q; want model and an owner", m.ID, m.Object, m.OwnedBy)
		}
	}
	for _, want := range []string{"gpt-4o-mini", "gpt-4o", "text-embedding-3-small", "default"} {
		if !slices.Contains(ids, want) {
			t.Errorf("models = %v, want %q among them", ids, want)
		}
	}
}

// TestErrors checks that the SDK sees the gateway's errors as *openai.Error
// with the right status, type and message.
func TestErrors(t *testing.T) {
	// A fake upstream that is always rate limited, with Retry-After.
	limited := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for sk-upstream-secret-0123456789 on requests per min","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
	})
	const upstreamKey = "sk-upstream-secret-0123456789"
	limitedCfg := `
model_list:
  - model_name: mock-limited
    litellm_params:
      model: openai/gpt-4o-mini
      mock_response: litellm.RateLimitError
  - model_name: upstream-limited
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: ` + limited.URL + `/v1
      api_key: ` + upstreamKey + `
router_settings:
  num_retries: 0
`
	keyed := startServerT(t, `
model_list:
  - model_name: gpt-4o-mini
    litellm_params:
      model: mock/gpt-4o-mini
general_settings:
  master_key: sk-master-1234
`)
	rl := startServerT(t, limitedCfg)

	tests := []struct {
		name       string
		srv        *server
		key        string
		model      string
		stream     bool
		wantStatus int
		wantType   string
		wantMsg    []string // substrings of the message
		retryAfter bool     // Retry-After must be set
	}{
		{name: "401 wrong key", srv: keyed, key: "sk-wrong", model: "gpt-4o-mini",
			wantStatus: 401, wantType: "authentication_error", wantMsg: []string{"Authentication Error, Invalid proxy server token passed."}},
		{name: "401 wrong key stream", srv: keyed, key: "sk-wrong", model: "gpt-4o-mini", stream: true,
			wantStatus: 401, wantType: "authentication_error", wantMsg: []string{"Authentication Error, Invalid proxy server token passed."}},
		{name: "404 unknown model", srv: defaultServer, model: "gpt-5-nonexistent",
			wantStatus: 404, wantType: "invalid_request_error", wantMsg: []string{`"gpt-5-nonexistent"`, "gpt-4o-mini"}},
		{name: "404 unknown model stream", srv: defaultServer, model: "gpt-5-nonexistent", stream: true,
			wantStatus: 404, wantMsg: []string{`"gpt-5-nonexistent"`}},
		{name: "429 mock_response RateLimitError", srv: rl, model: "mock-limited",
			wantStatus: 429, wantType: "rate_limit_error"},
		{name: "429 upstream with Retry-After", srv: rl, model: "upstream-limited",
			wantStatus: 429, wantType: "rate_limit_error", retryAfter: true},
		{name: "429 upstream with Retry-After stream", srv: rl, model: "upstream-limited", stream: true,
			wantStatus: 429, wantType: "rate_limit_error", retryAfter: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []option.RequestOption
			if tt.key != "" {
				opts = append(opts, option.WithAPIKey(tt.key))
			}
			client := newClient(tt.srv, opts...)
			ctx := testContext(t)
			var err error
			if tt.stream {
				s := client.Chat.Completions.NewStreaming(ctx, chatParams(tt.model))
				for s.Next() {
					t.Errorf("unexpected chunk: %s", s.Current().RawJSON())
				}
				err = s.Err()
				s.Close()
			} else {
				_, err = client.Chat.Completions.New(ctx, chatParams(tt.model))
			}
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v (%T), want *openai.Error", err, err)
			}
			if apiErr.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d (%s)", apiErr.StatusCode, tt.wantStatus, apiErr.RawJSON())
			}
			if tt.wantType != "" && apiErr.Type != tt.wantType {
				t.Errorf("type = %q, want %q", apiErr.Type, tt.wantType)
			}
			if apiErr.Message == "" || apiErr.Code == "" {
				t.Errorf("message %q, code %q: want both set", apiErr.Message, apiErr.Code)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(apiErr.Message, m) {
					t.Errorf("message = %q, want it to contain %q", apiErr.Message, m)
				}
			}
			if ra := apiErr.Response.Header.Get("Retry-After"); tt.retryAfter && ra == "" {
				t.Errorf("no Retry-After header on a 429 from an upstream that sent one")
			}
			if strings.Contains(apiErr.RawJSON(), upstreamKey) {
				t.Errorf("the upstream's key reached the client: %s", apiErr.RawJSON())
			}
		})
	}
	t.Run("master key accepted", func(t *testing.T) {
		client := newClient(keyed, option.WithAPIKey("sk-master-1234"))
		if _, err := client.Chat.Completions.New(testContext(t), chatParams("gpt-4o-mini")); err != nil {
			t.Fatalf("with the master key: %v", err)
		}
	})
	t.Run("no key in logs", func(t *testing.T) {
		for name, s := range map[string]*server{"keyed": keyed, "limited": rl} {
			out := s.log.String()
			for _, secret := range []string{upstreamKey, "sk-master-1234"} {
				if strings.Contains(out, secret) {
					t.Errorf("%s gateway logged a key:\n%s", name, out)
				}
			}
		}
	})
}

func newFakeUpstream(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}
