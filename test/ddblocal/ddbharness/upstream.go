package ddbharness

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
)

// Answer is the content of Upstream's non-streamed answer.
const Answer = "hello there"

// Upstream is an OpenAI-compatible provider: a JSON answer (Answer, 10 +
// 5 tokens), a stream ending with a usage chunk (10 + 3) when asked for
// one, a stream that hangs after its first chunk when the prompt says
// "hang", and a 500 under /fail.
func Upstream(t *testing.T) *httptest.Server {
	return gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(r.URL.Path, "/fail") {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"boom"}}`)
			return
		}
		if !strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`+Answer+`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		chunk := func(s string) { io.WriteString(w, "data: "+s+"\n\n"); f.Flush() }
		chunk(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"hel"},"finish_reason":null}]}`)
		if strings.Contains(string(body), "hang") {
			<-r.Context().Done()
			return
		}
		chunk(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`)
		if strings.Contains(string(body), `"include_usage":true`) {
			chunk(`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}`)
		}
		io.WriteString(w, "data: [DONE]\n\n")
		f.Flush()
	})
}
