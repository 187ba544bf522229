package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
)

// sseUpstream streams the given events; before each event after the first it
// waits for a signal on next, so the test controls the pace.
func sseUpstream(t *testing.T, events []string, next <-chan struct{}, cut bool, gotBody *[]byte) *httptest.Server {
	return gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if gotBody != nil {
			*gotBody = b
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i, ev := range events {
			if i > 0 && next != nil {
				select {
				case <-next:
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
		if cut { // break the connection mid-stream
			hj, ok := w.(http.Hijacker)
			if !ok {
				t.Error("cannot hijack")
				return
			}
			conn, _, _ := hj.Hijack()
			conn.Close()
		}
	})
}

func chunk(content string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}]}` + "\n\n"
}

const roleChunk = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"

// The first event reaches the client before the upstream sends the second:
// nothing buffers the stream.
func TestStreamNotBuffered(t *testing.T) {
	next := make(chan struct{})
	var upBody []byte
	up := sseUpstream(t, []string{roleChunk + chunk("Hel"), chunk("lo"), "data: [DONE]\n\n"}, next, false, &upBody)
	defer up.Close()
	f := newFixture(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s}\n", up.URL), nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","stream":true,"messages":[]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(resp.Body)
	readEvent := func() string {
		var b strings.Builder
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("read event: %v (so far %q)", err, b.String())
			}
			b.WriteString(line)
			if line == "\n" {
				return b.String()
			}
		}
	}
	if ev := readEvent(); ev != roleChunk {
		t.Fatalf("first event = %q", ev)
	}
	if ev := readEvent(); ev != chunk("Hel") {
		t.Fatalf("second event = %q", ev)
	}
	next <- struct{}{} // only now does the upstream send "lo"
	if ev := readEvent(); ev != chunk("lo") {
		t.Fatalf("third event = %q", ev)
	}
	next <- struct{}{}
	if ev := readEvent(); ev != "data: [DONE]\n\n" {
		t.Fatalf("last event = %q", ev)
	}
	if !bytes.Contains(upBody, []byte(`"include_usage":true`)) {
		t.Errorf("usage not requested from upstream: %s", upBody)
	}
}

func TestStreamUsageChunk(t *testing.T) {
	usage := `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}` + "\n\n"
	events := []string{chunk("a"), usage, "data: [DONE]\n\n"}
	for _, asked := range []bool{false, true} {
		t.Run(fmt.Sprintf("include_usage=%v", asked), func(t *testing.T) {
			up := sseUpstream(t, events, nil, false, nil)
			defer up.Close()
			f := newFixture(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s}\n", up.URL), nil)
			body := `{"model":"m","stream":true,"messages":[]}`
			if asked {
				body = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
			}
			out := gatewaytest.ReadAll(t, f.post(t, "/v1/chat/completions", "", body).Body)
			if got := strings.Contains(out, `"usage"`); got != asked {
				t.Errorf("client saw usage chunk = %v, want %v:\n%s", got, asked, out)
			}
		})
	}
}

func TestStreamCutMidway(t *testing.T) {
	up := sseUpstream(t, []string{chunk("partial")}, nil, true, nil)
	defer up.Close()
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s}
  - model_name: other
    litellm_params: {model: mock/other}
router_settings: {fallbacks: [{m: [other]}]}
`, up.URL), nil)
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","stream":true,"messages":[]}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := chunk("partial")
	if !strings.HasPrefix(out, want) {
		t.Fatalf("stream = %q", out)
	}
	rest := strings.TrimPrefix(out, want)
	if !strings.HasPrefix(rest, `data: {"error":`) || !strings.HasSuffix(rest, "\n\n") || strings.Count(rest, "data:") != 1 {
		t.Fatalf("after the cut, want exactly one error event, got %q", rest)
	}
	if strings.Contains(out, "mock response") {
		t.Fatalf("fallback output spliced into a started stream: %q", out)
	}
	openAIError(t, strings.TrimSpace(strings.TrimPrefix(rest, "data: ")))
}

// stalling is an upstream that streams one chunk of content, then waits
// for its request to be cancelled (and closes cancelled, if set) or for the
// test to end.
func stalling(t *testing.T, content string, cancelled chan<- struct{}) *httptest.Server {
	ended := make(chan struct{})
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk(content))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			if cancelled != nil {
				close(cancelled)
			}
		case <-ended:
		}
	})
	t.Cleanup(func() { close(ended) }) // first: Close waits for the handler
	return up
}

// leaveMidStream posts a streamed request, reads the first line of its
// answer, and goes away.
func (f *fixture) leaveMidStream(t *testing.T, body string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(resp.Body).ReadString('\n'); !strings.HasPrefix(line, "data:") {
		t.Fatalf("first line %q", line)
	}
	cancel()
	resp.Body.Close()
	return resp
}

// A client that goes away cancels the upstream request.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	cancelled := make(chan struct{})
	up := stalling(t, "a", cancelled)
	f := newFixture(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s}\n", up.URL), nil)
	f.leaveMidStream(t, `{"model":"m","stream":true}`)
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second): // a bound on a hang, not a timing assertion
		t.Fatal("upstream request was not cancelled after the client went away")
	}
}

// TestUpstreamHeadersOnStreams: the provider's request id and rate-limit
// headers reach the client as llm_provider-* on streams too, as on unary
// responses.
func TestUpstreamHeadersOnStreams(t *testing.T) {
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req_123")
		w.Header().Set("X-Ratelimit-Remaining-Requests", "99")
		w.Header().Set("Openai-Processing-Ms", "7")
		w.Header().Set("X-Other", "not copied")
		if strings.Contains(gatewaytest.ReadAll(t, r.Body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, roleChunk+chunk("hi")+"data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, completion)
	})
	f := keyedFixture(t, fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/gpt-4o, api_base: %q, api_key: sk-up}
general_settings: {master_key: sk-master}
`, up.URL+"/v1"))
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			resp := f.post(t, "/v1/chat/completions", "sk-master", fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":%v}`, stream))
			out := gatewaytest.ReadAll(t, resp.Body)
			if resp.StatusCode != 200 || !strings.Contains(out, "hi") {
				t.Fatalf("status %d: %s", resp.StatusCode, out)
			}
			h := resp.Header
			if h.Get("Llm_provider-X-Request-Id") != "req_123" || h.Get("Llm_provider-X-Ratelimit-Remaining-Requests") != "99" ||
				h.Get("Llm_provider-Openai-Processing-Ms") != "7" || h.Get("Llm_provider-X-Other") != "" {
				t.Fatalf("headers %v", h)
			}
		})
	}
}

// expiring is a request context whose deadline passes when the test says
// so: in Lambda the request context ends a margin before the invocation's
// deadline, so that the handler can still tell the client why it stops.
type expiring struct {
	context.Context
	once sync.Once
	done chan struct{}
}

func (c *expiring) Done() <-chan struct{} { return c.done }
func (c *expiring) expire()               { c.once.Do(func() { close(c.done) }) }
func (c *expiring) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A stream whose request reaches its deadline after content was sent ends
// with an OpenAI-style error event, not silently: a deadline is not the
// client going away, and a client would take the cut answer for a whole one.
func TestStreamDeadlineAfterContent(t *testing.T) {
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk("Hello"))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // then nothing more
	})
	h := testHandler(Options{Config: loadConfig(t, fmt.Sprintf("model_list:\n  - model_name: slow\n    litellm_params: {model: openai/slow, api_base: %s/v1, api_key: k}\n", up.URL))})
	ctx := &expiring{Context: context.Background(), done: make(chan struct{})}
	srv := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(ctx))
	})
	defer ctx.expire()

	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"slow","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.Contains(first, `"content":"Hello"`) {
		t.Fatalf("first line %q (%v), want the content chunk", first, err)
	}
	ctx.expire() // the deadline passes while the upstream is silent
	rest := readAllBounded(t, br, 10*time.Second)
	if !strings.Contains(rest, `data: {"error":`) || !strings.Contains(rest, "time limit") {
		t.Fatalf("after the deadline the stream ended with %q, want an error event saying the time ran out", rest)
	}
}

// readAllBounded reads r to its end; the bound only stops a hang.
func readAllBounded(t *testing.T, r io.Reader, bound time.Duration) string {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() { b, err := io.ReadAll(r); ch <- result{b, err} }()
	select {
	case res := <-ch:
		if res.err != nil {
			t.Fatalf("read: %v", res.err)
		}
		return string(res.b)
	case <-time.After(bound): // a bound on a hang, not a timing assertion
		t.Fatal("the stream did not end after the deadline")
		return ""
	}
}
