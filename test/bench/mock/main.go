// Command mock is an OpenAI-compatible upstream for the gateway overhead
// benchmark (go run ./test/bench). POST /v1/chat/completions answers a fixed
// completion with usage at once, or with "stream":true N SSE chunks and
// [DONE]; POST /v1/messages the same as Anthropic's Messages API (its
// events); GET /v1/models a fixed list. It listens on loopback only.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"time"
)

var (
	addr       = flag.String("addr", "127.0.0.1:18080", "listen address (loopback only)")
	chunks     = flag.Int("chunks", 20, "number of SSE data chunks per streamed response (before [DONE])")
	chunkDelay = flag.Duration("chunk-delay", 0, "sleep before each SSE chunk after the first (e.g. 5ms)")
)

const model = "gpt-4o-mini"

var completionBody = []byte(`{"id":"chatcmpl-mock0001","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","system_fingerprint":"fp_mock","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! This is a fixed response from the mock upstream."},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":13,"total_tokens":25}}`)

var modelsBody = []byte(`{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","created":1700000000,"owned_by":"mock"},{"id":"gpt-4o","object":"model","created":1700000000,"owned_by":"mock"}]}`)

var sseChunks [][]byte // precomputed "data: {...}\n\n" frames, last one is [DONE]

func buildChunks(n int) {
	if n < 2 {
		n = 2
	}
	head := `{"id":"chatcmpl-mock0001","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","system_fingerprint":"fp_mock","choices":[`
	for i := 0; i < n; i++ {
		var s string
		switch {
		case i == 0:
			s = head + `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`
		case i == n-1:
			s = head + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":` + fmt.Sprint(n-2) + `,"total_tokens":` + fmt.Sprint(12+n-2) + `}}`
		default:
			s = head + fmt.Sprintf(`{"index":0,"delta":{"content":"tok%d "},"logprobs":null,"finish_reason":null}]}`, i)
		}
		sseChunks = append(sseChunks, []byte("data: "+s+"\n\n"))
	}
	sseChunks = append(sseChunks, []byte("data: [DONE]\n\n"))
}

type reqHead struct {
	Stream bool `json:"stream"`
}

func chat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"method not allowed"}}`, http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	var h reqHead
	if err := json.Unmarshal(body, &h); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"message":"invalid json","type":"invalid_request_error"}}`))
		return
	}
	if !h.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(completionBody)))
		w.Write(completionBody)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for i, c := range sseChunks {
		if i > 0 && *chunkDelay > 0 && i < len(sseChunks)-1 {
			time.Sleep(*chunkDelay)
		}
		if _, err := w.Write(c); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
}

// messageEvents are the precomputed events of a streamed Anthropic Messages
// answer: as many text deltas as the chat stream has content chunks.
var messageEvents [][]byte

func buildMessageEvents(n int) {
	ev := func(typ, data string) {
		messageEvents = append(messageEvents, []byte("event: "+typ+"\ndata: "+data+"\n\n"))
	}
	ev("message_start", `{"type":"message_start","message":{"id":"msg_mock0001","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev("ping", `{"type": "ping"}`)
	for i := 1; i < n-1; i++ {
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tok%d "}}`, i))
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, n-2))
	ev("message_stop", `{"type":"message_stop"}`)
}

// messages answers POST /v1/messages with the stream of messageEvents (or,
// without "stream":true, one message).
func messages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	var h reqHead
	if err != nil || json.Unmarshal(body, &h) != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"invalid json"}}`))
		return
	}
	if !h.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"msg_mock0001","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hello! This is a fixed response from the mock upstream."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":13}}`))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for i, ev := range messageEvents {
		if i > 0 && *chunkDelay > 0 && i < len(messageEvents)-1 {
			time.Sleep(*chunkDelay)
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
}

func models(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(modelsBody)
}

func main() {
	flag.Parse()
	if !strings.HasPrefix(*addr, "127.") && !strings.HasPrefix(*addr, "localhost:") {
		log.Fatalf("refusing non-loopback addr %q", *addr)
	}
	buildChunks(*chunks)
	buildMessageEvents(*chunks)
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", chat)
	mux.HandleFunc("/chat/completions", chat)
	mux.HandleFunc("/v1/messages", messages)
	mux.HandleFunc("/v1/models", models)
	mux.HandleFunc("/models", models)
	// Empty pricing datasheet so a gateway's pricing sync (pointed here) never leaves loopback.
	mux.HandleFunc("/datasheet", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}"))
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("mock upstream on http://%s chunks=%d chunk-delay=%s model=%s", *addr, *chunks, *chunkDelay, model)
	log.Fatal(srv.ListenAndServe())
}
