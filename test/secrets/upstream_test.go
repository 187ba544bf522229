package secrets

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"
)

// Modes of the hostile upstream, chosen by the deployment's api_base
// (.../m/<mode>): each failure echoes every credential the request carried
// (Authorization, api-key, x-api-key, x-goog-api-key, X-Amz-Security-Token,
// a key in the query).
var modes = []string{
	"ok",        // a normal answer
	"e401",      // 401, JSON error echoing the credentials
	"e429",      // 429, the same
	"e500",      // 500, the same
	"e400",      // 400 with the credentials in message, code and param
	"text500",   // 500, a plain-text body echoing the request headers
	"firsterr",  // a 200 stream whose first event is an error echoing them
	"midstream", // a 200 stream: content, then an error event echoing them
	"cut",       // a 200 stream cut after its first content
}

// echo is every credential header of r, as received.
func echo(r *http.Request) string {
	var parts []string
	for _, h := range []string{"Authorization", "Api-Key", "X-Api-Key", "X-Goog-Api-Key", "X-Amz-Security-Token"} {
		if v := r.Header.Get(h); v != "" {
			parts = append(parts, h+"="+v)
		}
	}
	if k := r.URL.Query().Get("key"); k != "" {
		parts = append(parts, "key="+k)
	}
	return strings.Join(parts, " ")
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// hostile is an OpenAI, Azure OpenAI, Anthropic and Gemini API in one: the
// path says which, and its /m/<mode> prefix how it behaves.
func hostile(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		parts := strings.SplitN(r.URL.Path, "/", 4) // "", "m", mode, rest
		if len(parts) < 4 || parts[1] != "m" {
			http.Error(w, "no mode", 404)
			return
		}
		mode := parts[2]
		anthropic := strings.HasSuffix(r.URL.Path, "/messages") || strings.HasSuffix(r.URL.Path, ":rawPredict") || strings.HasSuffix(r.URL.Path, ":streamRawPredict") // Claude on Vertex
		gemini := strings.Contains(r.URL.Path, "GenerateContent") || strings.Contains(r.URL.Path, ":generateContent")
		stream := gjson.GetBytes(body, "stream").Bool() || strings.Contains(r.URL.Path, ":streamGenerateContent")
		cred := echo(r)
		msg := "Incorrect API key provided: " + cred + ". You can find your API key at https://example.invalid."
		errJSON := func(typ string) string {
			if anthropic {
				return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%s}}`, typ, jsonString(msg))
			}
			if gemini { // Google's shape, the credentials in its reason too
				return fmt.Sprintf(`{"error":{"code":400,"message":%s,"status":%q,"details":[{"reason":%s}]}}`, jsonString(msg), typ, jsonString(cred))
			}
			return fmt.Sprintf(`{"error":{"message":%s,"type":%q,"param":null,"code":"invalid_api_key"}}`, jsonString(msg), typ)
		}
		fail := func(status int, typ string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, errJSON(typ))
		}
		switch mode {
		case "e401":
			fail(401, "authentication_error")
			return
		case "e429":
			fail(429, "rate_limit_error")
			return
		case "e500":
			fail(500, "api_error")
			return
		case "e400":
			if gemini {
				fail(400, "INVALID_ARGUMENT")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","param":%s,"code":%s}}`, jsonString(msg), jsonString(cred), jsonString(cred))
			return
		case "text500":
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(500)
			fmt.Fprintf(w, "internal error while handling %s; request headers: %v", r.URL.Path, r.Header)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/embeddings") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"e","usage":{"prompt_tokens":2,"total_tokens":2}}`)
			return
		}
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			if gemini {
				io.WriteString(w, `{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1}}`)
			} else if anthropic {
				io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}`)
			} else {
				io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		send := func(name, data string) {
			if anthropic {
				io.WriteString(w, "event: "+name+"\n")
			}
			io.WriteString(w, "data: "+data+"\n\n")
			w.(http.Flusher).Flush()
		}
		if mode == "firsterr" {
			send("error", errJSON("api_error"))
			return
		}
		if gemini {
			send("", `{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"index":0}]}`)
		} else if anthropic {
			send("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`)
			send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`)
		} else {
			send("", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`)
		}
		switch mode {
		case "midstream":
			send("error", errJSON("api_error"))
			return
		case "cut":
			panic(http.ErrAbortHandler)
		}
		if gemini {
			send("", `{"candidates":[{"content":{"parts":[{"text":"!"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2}}`)
			return
		}
		if anthropic {
			send("content_block_stop", `{"type":"content_block_stop","index":0}`)
			send("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}`)
			send("message_stop", `{"type":"message_stop"}`)
			return
		}
		send("", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
		send("", "[DONE]")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// hostileBedrock is a Bedrock runtime that fails as mode says, echoing the
// SigV4 Authorization and the session token it received (Bedrock's error
// shapes: a JSON body with X-Amzn-ErrorType, or an exception frame in the
// event stream); "ok" and "cut" answer a short stream or message.
func hostileBedrock(t *testing.T, mode string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		msg := "The security token included in the request is invalid: " + echo(r)
		apiError := func(status int, typ string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-ErrorType", typ+":http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"message":%s}`, jsonString(msg))
		}
		switch mode {
		case "e401":
			apiError(403, "UnrecognizedClientException")
			return
		case "e429":
			apiError(429, "ThrottlingException")
			return
		case "e500", "text500":
			apiError(500, "InternalServerException")
			return
		case "e400":
			apiError(400, "ValidationException")
			return
		}
		if !strings.HasSuffix(r.URL.Path, "/converse-stream") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"Hello"}]}},"stopReason":"end_turn","usage":{"inputTokens":5,"outputTokens":1,"totalTokens":6},"metrics":{"latencyMs":1}}`)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.WriteHeader(200)
		enc := eventstream.NewEncoder()
		frame := func(kind, typ string, payload any) {
			p, _ := json.Marshal(payload)
			var h eventstream.Headers
			h.Set(":message-type", eventstream.StringValue(kind))
			if kind == "exception" {
				h.Set(":exception-type", eventstream.StringValue(typ))
			} else {
				h.Set(":event-type", eventstream.StringValue(typ))
			}
			h.Set(":content-type", eventstream.StringValue("application/json"))
			_ = enc.Encode(w, eventstream.Message{Headers: h, Payload: p})
			w.(http.Flusher).Flush()
		}
		if mode == "firsterr" {
			frame("exception", "throttlingException", map[string]string{"message": msg})
			return
		}
		frame("event", "messageStart", map[string]any{"role": "assistant"})
		frame("event", "contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": "Hello"}})
		switch mode {
		case "midstream":
			frame("exception", "modelStreamErrorException", map[string]string{"message": msg})
			return
		case "cut":
			panic(http.ErrAbortHandler)
		}
		frame("event", "contentBlockStop", map[string]any{"contentBlockIndex": 0})
		frame("event", "messageStop", map[string]any{"stopReason": "end_turn"})
		frame("event", "metadata", map[string]any{"usage": map[string]any{"inputTokens": 5, "outputTokens": 1, "totalTokens": 6}, "metrics": map[string]any{"latencyMs": 1}})
	}))
	t.Cleanup(srv.Close)
	return srv
}
