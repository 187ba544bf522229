// Package mock answers calls in-process with LiteLLM's mock_response
// semantics: a fixed reply, or an injected error named like LiteLLM's
// exceptions ("litellm.RateLimitError"). It serves the embedded default
// config, demos and tests, and needs no network.
package mock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/catalog"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

var seq atomic.Uint64

// errors LiteLLM's mock_response can raise, as the upstream status and body
// a real provider would send.
var injected = map[string]struct {
	status int
	code   string
	msg    string
}{
	"litellm.RateLimitError":              {429, "rate_limit_exceeded", "mock rate limit"},
	"litellm.InternalServerError":         {500, "server_error", "mock internal server error"},
	"litellm.ServiceUnavailableError":     {503, "service_unavailable", "mock service unavailable"},
	"litellm.Timeout":                     {408, "timeout", "mock timeout"},
	"litellm.APIConnectionError":          {502, "connection_error", "mock connection error"},
	"litellm.BadRequestError":             {400, "invalid_request", "mock bad request"},
	"litellm.AuthenticationError":         {401, "invalid_api_key", "mock authentication error"},
	"litellm.NotFoundError":               {404, "model_not_found", "mock not found"},
	"litellm.ContextWindowExceededError":  {400, "context_length_exceeded", "This model's maximum context length is exceeded (mock)"},
	"litellm.ContentPolicyViolationError": {400, "content_filter", "mock content policy violation"},
}

// Provider answers calls in-process. The dispatcher also sends it every
// deployment that sets mock_response, whatever its provider.
type Provider struct{}

// Do answers call as d would; it never fails to answer.
func (Provider) Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	return Respond(ctx, d, call), nil
}

// StreamUsage reports that a mock stream always counts its usage.
func (Provider) StreamUsage(*config.Deployment) bool { return true }

// Respond answers call as deployment d would.
func Respond(ctx context.Context, d *config.Deployment, call wire.Call) *http.Response {
	reply := ""
	if d.MockResponse != nil {
		reply = *d.MockResponse
	}
	if call.MockResponse != nil && d.Protocol == catalog.Mock {
		reply = *call.MockResponse
	}
	if e, ok := injected[strings.TrimSpace(reply)]; ok {
		body := fmt.Sprintf(`{"error":{"message":%q,"type":"mock_error","param":null,"code":%q}}`, e.msg, e.code)
		return response(e.status, "application/json", []byte(body))
	}
	if err := ctx.Err(); err != nil {
		return response(408, "application/json", []byte(`{"error":{"message":"request cancelled","code":"timeout"}}`))
	}
	model := d.Model
	if call.Op == wire.OpEmbeddings {
		return response(200, "application/json", embeddings(model, call))
	}
	if reply == "" {
		reply = fmt.Sprintf("This is a mock response from %s (deployment %s).", model, d.ID)
	}
	if call.Op == wire.OpCompletions { // completions.go
		ct := "application/json"
		if call.Stream {
			ct = "text/event-stream"
		}
		return response(200, ct, textCompletion(model, reply, call))
	}
	id := "chatcmpl-mock-" + strconv.FormatUint(seq.Add(1), 10)
	created := time.Now().Unix()
	prompt := int64(call.PromptTokens)
	completion := int64(len(strings.Fields(reply)))
	if call.Stream {
		return response(200, "text/event-stream", stream(id, model, created, reply, prompt, completion, gjson.GetBytes(call.Body, "stream_options.include_usage").Bool()))
	}
	body, _ := json.Marshal(map[string]any{
		"id": id, "object": "chat.completion", "created": created, "model": model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": reply},
		}},
		"usage": usage(prompt, completion),
	})
	return response(200, "application/json", body)
}

func usage(prompt, completion int64) map[string]any {
	return map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
}

func stream(id, model string, created int64, reply string, prompt, completion int64, includeUsage bool) []byte {
	var b bytes.Buffer
	chunk := func(delta map[string]any, finish any) {
		j, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		b.WriteString("data: ")
		b.Write(j)
		b.WriteString("\n\n")
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	words := strings.SplitAfter(reply, " ")
	for _, w := range words {
		chunk(map[string]any{"content": w}, nil)
	}
	chunk(map[string]any{}, "stop")
	if includeUsage {
		j, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": usage(prompt, completion),
		})
		b.WriteString("data: ")
		b.Write(j)
		b.WriteString("\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// embeddings returns deterministic unit vectors derived from each input.
func embeddings(model string, call wire.Call) []byte {
	in := gjson.GetBytes(call.Body, "input")
	var inputs []string
	switch arr := in.Array(); {
	case in.IsArray() && len(arr) > 0 && arr[0].Type == gjson.Number: // one input given as tokens
		inputs = []string{in.Raw}
	case in.IsArray():
		for _, v := range arr {
			inputs = append(inputs, text(v))
		}
	default:
		inputs = []string{text(in)}
	}
	dims := int(gjson.GetBytes(call.Body, "dimensions").Int())
	if dims <= 0 || dims > 4096 {
		dims = 8
	}
	data := make([]any, len(inputs))
	for i, s := range inputs {
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": vector(s, dims)}
	}
	prompt := int64(call.PromptTokens)
	body, _ := json.Marshal(map[string]any{
		"object": "list", "model": model, "data": data,
		"usage": map[string]any{"prompt_tokens": prompt, "total_tokens": prompt},
	})
	return body
}

// text is an input's value: the decoded string, or the raw JSON of tokens.
func text(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.Str
	}
	return v.Raw
}

func vector(s string, dims int) []float64 {
	v := make([]float64, dims)
	var norm float64
	var h [sha256.Size]byte
	for i := range v {
		if i%8 == 0 { // a fresh block of 8 values every 8 dimensions
			h = sha256.Sum256([]byte(s + "#" + strconv.Itoa(i/8)))
		}
		x := binary.LittleEndian.Uint32(h[(i%8)*4:])
		v[i] = float64(x)/math.MaxUint32*2 - 1
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] /= norm
	}
	return v
}

func response(status int, contentType string, body []byte) *http.Response {
	return &http.Response{
		StatusCode:    status,
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		Header:        http.Header{"Content-Type": {contentType}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
	}
}
