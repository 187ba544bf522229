// Package bedrocktest is a fake Amazon Bedrock runtime over HTTP for tests:
// Converse answers in JSON, ConverseStream in real
// application/vnd.amazon.eventstream frames written with aws-sdk-go-v2's
// eventstream encoder, and Bedrock's errors (before a stream, as a stream's
// first frame, or after content). Point a client at it with BaseEndpoint,
// AWS_ENDPOINT_URL_BEDROCK_RUNTIME or a deployment's api_base.
package bedrocktest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
)

// Fault is how the fake fails.
type Fault string

const (
	Healthy            Fault = ""
	Throttle           Fault = "throttling (429 before the stream)"
	ThrottleFirstFrame Fault = "throttling exception as the first stream frame"
	TooLong            Fault = "validation: input too long"
	Validation         Fault = "validation: other"
	AccessDenied       Fault = "access denied"
	NotFound           Fault = "resource not found"
	Unavailable        Fault = "service unavailable"
	Internal           Fault = "internal server error"
	ModelTimeout       Fault = "model timeout"
	BreakAfterContent  Fault = "stream exception after content"
	CutAfterContent    Fault = "connection cut after content"
	Hang               Fault = "never answers"
)

// Usage is what every answer reports: 20 uncached input tokens, 8 read from
// the prompt cache, 4 written to it, 6 output tokens.
var Usage = struct{ Input, Output, CacheRead, CacheWrite int }{20, 6, 8, 4}

// Call is one request the fake received.
type Call struct {
	ModelID string
	Stream  bool
	Body    string
	Auth    string // the Authorization header (SigV4)
}

// Server is the fake runtime.
type Server struct {
	*httptest.Server
	Name string // in replies: "Hello from <Name>."

	mu    sync.Mutex
	calls []Call
	fault Fault
}

// New starts a fake; close it with Close.
func New(name string) *Server {
	s := &Server{Name: name}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// SetFault makes the following calls fail with f.
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Calls returns the calls received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

var errorTypes = map[Fault]struct {
	status int
	typ    string
	msg    string
}{
	Throttle:     {429, "ThrottlingException", "Too many requests, please wait before trying again."},
	TooLong:      {400, "ValidationException", "Input is too long for requested model."},
	Validation:   {400, "ValidationException", "The provided request is not valid"},
	AccessDenied: {403, "AccessDeniedException", "You don't have access to the model with the specified model ID."},
	NotFound:     {404, "ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier."},
	Unavailable:  {503, "ServiceUnavailableException", "Bedrock is unable to process your request."},
	Internal:     {500, "InternalServerException", "The system encountered an unexpected error during processing. Try your request again."},
	ModelTimeout: {408, "ModelTimeoutException", "Model has timed out in processing the request."},
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(path, "/model/")
	if !ok || r.Method != http.MethodPost {
		http.Error(w, `{"message":"unknown operation"}`, http.StatusNotFound)
		return
	}
	escID, op, _ := strings.Cut(rest, "/")
	id, _ := url.PathUnescape(escID)
	stream := op == "converse-stream" || op == "invoke-with-response-stream"
	s.mu.Lock()
	s.calls = append(s.calls, Call{ModelID: id, Stream: stream, Body: string(body), Auth: r.Header.Get("Authorization")})
	f := s.fault
	s.mu.Unlock()
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		apiError(w, 403, "UnrecognizedClientException", "The security token included in the request is invalid.")
		return
	}
	if e, ok := errorTypes[f]; ok {
		apiError(w, e.status, e.typ, e.msg)
		return
	}
	if f == Hang {
		<-r.Context().Done()
		return
	}
	if strings.Contains(id, "anthropic.") && (op == "invoke" || op == "invoke-with-response-stream" || op == "count-tokens") {
		s.claude(w, id, op, f, body) // claude.go
		return
	}
	if op == "invoke" {
		s.invoke(w, id, gjson.ParseBytes(body))
		return
	}
	reply := s.reply(gjson.ParseBytes(body))
	if !stream {
		content := []any{}
		if reply.reasoning != "" {
			content = append(content, map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]any{"text": reply.reasoning, "signature": "sig"}}})
		}
		if reply.text != "" {
			content = append(content, map[string]any{"text": reply.text})
		}
		if reply.tool != "" {
			var in any
			_ = json.Unmarshal([]byte(reply.toolInput), &in)
			content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_fake1", "name": reply.tool, "input": in}})
		}
		out, _ := json.Marshal(map[string]any{
			"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
			"stopReason": reply.stop,
			"usage":      usage(),
			"metrics":    map[string]any{"latencyMs": 12},
		})
		w.Header().Set("Content-Type", "application/json")
		if f == CutAfterContent {
			w.WriteHeader(200)
			w.Write(out[:len(out)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		w.Write(out)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(200)
	event, exception := frames(w)
	if f == ThrottleFirstFrame {
		exception("throttlingException", "Too many tokens, please wait before trying again.")
		return
	}
	event("messageStart", map[string]any{"role": "assistant"})
	idx := 0
	if reply.reasoning != "" {
		event("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"reasoningContent": map[string]any{"text": reply.reasoning}}})
		event("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"reasoningContent": map[string]any{"signature": "sig"}}})
		event("contentBlockStop", map[string]any{"contentBlockIndex": idx})
		idx++
	}
	if reply.text != "" {
		words := strings.SplitAfter(reply.text, " ")
		for i, w := range words {
			event("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"text": w}})
			if i == 0 {
				switch f {
				case BreakAfterContent:
					exception("modelStreamErrorException", "The model stream broke.")
					return
				case CutAfterContent:
					panic(http.ErrAbortHandler)
				}
			}
		}
		event("contentBlockStop", map[string]any{"contentBlockIndex": idx})
		idx++
	}
	if reply.tool != "" {
		event("contentBlockStart", map[string]any{"contentBlockIndex": idx, "start": map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_fake1", "name": reply.tool}}})
		in := reply.toolInput
		for len(in) > 0 { // arguments in fragments of 7 bytes
			n := min(7, len(in))
			event("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"toolUse": map[string]any{"input": in[:n]}}})
			in = in[n:]
		}
		event("contentBlockStop", map[string]any{"contentBlockIndex": idx})
	}
	event("messageStop", map[string]any{"stopReason": reply.stop})
	event("metadata", map[string]any{"usage": usage(), "metrics": map[string]any{"latencyMs": 12}})
}

func usage() map[string]any {
	return map[string]any{"inputTokens": Usage.Input, "outputTokens": Usage.Output,
		"totalTokens":          Usage.Input + Usage.Output + Usage.CacheRead + Usage.CacheWrite,
		"cacheReadInputTokens": Usage.CacheRead, "cacheWriteInputTokens": Usage.CacheWrite}
}

type reply struct {
	text, reasoning, tool, toolInput, stop string
}

// reply answers a tool result with text, a request with tools with a tool
// call, an image with its size, a request with thinking with reasoning, and
// anything else with a greeting.
func (s *Server) reply(req gjson.Result) reply {
	msgs := req.Get("messages").Array()
	var last []gjson.Result
	if len(msgs) > 0 {
		last = msgs[len(msgs)-1].Get("content").Array()
	}
	r := reply{stop: "end_turn"}
	if req.Get("additionalModelRequestFields.thinking").Exists() {
		r.reasoning = "Thinking about it."
	}
	agent, args := agentTool(lastText(msgs, "text"), req.Get("toolConfig.tools.#.toolSpec.name").Array())
	switch {
	case len(last) > 0 && last[0].Get("toolResult").Exists() && agentTurn(msgs, "text"):
		r.text = "The tool said " + strings.TrimSpace(last[0].Get("toolResult.content.0.text").String()) + ". SLUICE-DONE"
	case len(last) > 0 && last[0].Get("toolResult").Exists():
		r.text = "It is " + last[0].Get("toolResult.content.0.text").String() + " in Paris."
	case req.Get("toolConfig.toolChoice.tool.name").Str == "json_tool_call": // a response_format
		r.tool, r.toolInput, r.stop = "json_tool_call", gatewaytest.StructuredAnswer, "tool_use"
	case agent != "":
		r.tool, r.toolInput, r.stop = agent, args, "tool_use"
	case req.Get(`toolConfig.tools.#(toolSpec.name=="get_weather")`).Exists():
		r.tool, r.toolInput, r.stop = "get_weather", `{"location": "Paris"}`, "tool_use"
	case len(last) > 1 && last[1].Get("image").Exists():
		r.text = fmt.Sprintf("A %s image of %d base64 bytes.", last[1].Get("image.format").String(), len(last[1].Get("image.source.bytes").String()))
	default:
		r.text = "Hello from " + s.Name + "."
	}
	return r
}

// agentTool is the tool an agent's turn asking to "use the tool" gets a
// call of: the first of those offered that gatewaytest.ToolArgs knows, with
// its arguments; "" for any other turn.
func agentTool(userText string, offered []gjson.Result) (name, args string) {
	if !strings.Contains(userText, "use the tool") {
		return "", ""
	}
	for _, n := range offered {
		if a, ok := gatewaytest.ToolArgs[n.Str]; ok {
			return n.Str, a
		}
	}
	return "", ""
}

// agentTurn reports whether the conversation's first user text asked to
// "use the tool" (an agent's tool loop, as against the get_weather tests).
func agentTurn(msgs []gjson.Result, textKey string) bool {
	for _, m := range msgs {
		if m.Get("role").Str != "user" {
			continue
		}
		var found bool
		m.Get("content").ForEach(func(_, c gjson.Result) bool {
			found = strings.Contains(c.Get(textKey).Str, "use the tool")
			return !found
		})
		if found || strings.Contains(m.Get("content").Str, "use the tool") {
			return true
		}
	}
	return false
}

// lastText is the text of the last user message that has some (its
// content blocks' textKey fields, or a string content).
func lastText(msgs []gjson.Result, textKey string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Get("role").Str != "user" {
			continue
		}
		c := msgs[i].Get("content")
		if c.Type == gjson.String {
			return c.Str
		}
		var b strings.Builder
		c.ForEach(func(_, blk gjson.Result) bool {
			b.WriteString(blk.Get(textKey).Str)
			return true
		})
		if b.Len() > 0 {
			return b.String()
		}
	}
	return ""
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"message":%q}`, msg)
}

// invoke answers InvokeModel for embedding models: Titan text embeddings
// (one text) and Cohere embed (texts), with deterministic vectors; and for
// image models: Titan Image Generator / Nova Canvas and Stability, with
// FakeImages.
func (s *Server) invoke(w http.ResponseWriter, id string, req gjson.Result) {
	vector := func(text string, dims int) []float64 {
		v := make([]float64, dims)
		for i := range v {
			v[i] = float64(len(text)+i) / 100
		}
		return v
	}
	var out any
	switch {
	case strings.HasPrefix(id, "amazon.titan-embed"):
		dims := int(req.Get("dimensions").Int())
		if dims == 0 {
			dims = 4
		}
		text := req.Get("inputText").String()
		out = map[string]any{"embedding": vector(text, dims), "inputTextTokenCount": len(strings.Fields(text))}
	case strings.HasPrefix(id, "cohere.embed"):
		var vs [][]float64
		for _, t := range req.Get("texts").Array() {
			vs = append(vs, vector(t.String(), 3))
		}
		out = map[string]any{"id": "emb-1", "response_type": "embeddings_floats", "embeddings": vs, "texts": req.Get("texts").Value()}
	case strings.Contains(id, "amazon.titan-image-generator") || strings.Contains(id, "amazon.nova-canvas"):
		// The shape Titan and Nova Canvas require: a TEXT_IMAGE task with
		// its text; numberOfImages images (1 when absent).
		if req.Get("taskType").Str != "TEXT_IMAGE" || req.Get("textToImageParams.text").Str == "" {
			apiError(w, 400, "ValidationException", "taskType TEXT_IMAGE with textToImageParams.text is required")
			return
		}
		n := int(req.Get("imageGenerationConfig.numberOfImages").Int())
		out = map[string]any{"images": FakeImages(max(n, 1)), "error": nil}
	case strings.HasPrefix(id, "stability."):
		// SD3 and Stable Image take a prompt and make one image.
		if req.Get("prompt").Str == "" || req.Get("text_prompts").Exists() {
			apiError(w, 400, "ValidationException", "prompt is required")
			return
		}
		out = map[string]any{"seeds": []int{42}, "finish_reasons": []any{nil}, "images": FakeImages(1)}
	default:
		apiError(w, 400, "ValidationException", "The provided model identifier is invalid.")
		return
	}
	b, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// FakeImages are the images the fake makes: n distinct base64 strings
// ("fake-image-1", ...).
func FakeImages(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("fake-image-%d", i+1)))
	}
	return out
}

// frames returns writers of eventstream frames to w, each flushed: an event
// of a type with a JSON payload, and an exception with its message.
func frames(w http.ResponseWriter) (event func(typ string, payload any), exception func(typ, msg string)) {
	enc := eventstream.NewEncoder()
	write := func(h eventstream.Headers, payload any) {
		p, _ := json.Marshal(payload)
		h.Set(":content-type", eventstream.StringValue("application/json"))
		_ = enc.Encode(w, eventstream.Message{Headers: h, Payload: p})
		w.(http.Flusher).Flush()
	}
	event = func(typ string, payload any) {
		var h eventstream.Headers
		h.Set(":message-type", eventstream.StringValue("event"))
		h.Set(":event-type", eventstream.StringValue(typ))
		write(h, payload)
	}
	exception = func(typ, msg string) {
		var h eventstream.Headers
		h.Set(":message-type", eventstream.StringValue("exception"))
		h.Set(":exception-type", eventstream.StringValue(typ))
		write(h, map[string]string{"message": msg})
	}
	return event, exception
}
