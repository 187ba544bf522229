package lambda_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// runtimeAPI is a test double of the Lambda Runtime API
// (/2018-06-01/runtime/...): it hands out the invocations the test queues and
// records the function's response POST as it arrives, read by read, with its
// headers and trailers.
type runtimeAPI struct {
	srv  *httptest.Server
	next chan *invocation

	mu   sync.Mutex
	byID map[string]*invocation
	seq  int
}

// invocation is one event and what the function sent back for it.
type invocation struct {
	id       string
	event    []byte
	deadline time.Time
	chunks   chan []byte // each read of the response body, in order of arrival
	done     chan *posted
	// dropAfter, if set, makes the Runtime API drop the response connection
	// once the body holds it, as when the client went away.
	dropAfter []byte
}

// posted is a response (or error) POST as the Runtime API received it.
type posted struct {
	kind             string // "response" or "error"
	header           http.Header
	transferEncoding []string
	body             []byte
	trailer          http.Header
	readErr          error
}

func newRuntimeAPI(t *testing.T) *runtimeAPI {
	t.Helper()
	api := &runtimeAPI{next: make(chan *invocation), byID: map[string]*invocation{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", api.serveNext)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", func(w http.ResponseWriter, r *http.Request) {
		api.servePost(w, r, "response")
	})
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", func(w http.ResponseWriter, r *http.Request) {
		api.servePost(w, r, "error")
	})
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		t.Errorf("the function reported an init error: %s", b)
		w.WriteHeader(http.StatusAccepted)
	})
	api.srv = httptest.NewServer(mux)
	t.Cleanup(api.srv.Close)
	return api
}

func (api *runtimeAPI) addr() string { return strings.TrimPrefix(api.srv.URL, "http://") }

func (api *runtimeAPI) serveNext(w http.ResponseWriter, r *http.Request) {
	var inv *invocation
	select {
	case inv = <-api.next:
	case <-r.Context().Done():
		return
	}
	api.mu.Lock()
	api.byID[inv.id] = inv
	api.mu.Unlock()
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:sluice-gateway")
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0")
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(inv.event)
}

func (api *runtimeAPI) servePost(w http.ResponseWriter, r *http.Request, kind string) {
	api.mu.Lock()
	inv := api.byID[r.PathValue("id")]
	api.mu.Unlock()
	if inv == nil {
		http.Error(w, "unknown invocation", http.StatusBadRequest)
		return
	}
	p := &posted{kind: kind, header: r.Header.Clone(), transferEncoding: r.TransferEncoding}
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Body.Read(buf)
		if n > 0 {
			chunk := bytes.Clone(buf[:n])
			p.body = append(p.body, chunk...)
			inv.chunks <- chunk
			if inv.dropAfter != nil && bytes.Contains(p.body, inv.dropAfter) {
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
				}
				p.kind = "dropped"
				inv.done <- p
				return
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p.readErr = err
			break
		}
	}
	p.trailer = r.Trailer.Clone() // complete once the body is read
	w.WriteHeader(http.StatusAccepted)
	inv.done <- p
}

// invoke queues ev for the function and returns its invocation.
func (api *runtimeAPI) invoke(t *testing.T, ev []byte, deadline time.Time) *invocation {
	t.Helper()
	api.mu.Lock()
	api.seq++
	id := fmt.Sprintf("inv-%d", api.seq)
	api.mu.Unlock()
	inv := &invocation{id: id, event: ev, deadline: deadline, chunks: make(chan []byte, 4096), done: make(chan *posted, 1)}
	select {
	case api.next <- inv:
	case <-time.After(guard):
		t.Fatal("the function never asked for the next invocation")
	}
	return inv
}

// wait returns the function's POST for inv.
func (inv *invocation) wait(t *testing.T) *posted {
	t.Helper()
	select {
	case p := <-inv.done:
		return p
	case <-time.After(guard):
		t.Fatal("the function never finished its response")
		return nil
	}
}

// startChild runs this test binary as a Lambda function (runChild) against
// api, with env added.
func startChild(t *testing.T, api *runtimeAPI, env ...string) *syncBuffer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=1", "AWS_LAMBDA_RUNTIME_API=" + api.addr()}, env...)...)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if strings.Contains(logs.String(), "DATA RACE") {
			t.Errorf("race in the function:\n%s", logs.String())
		}
		if t.Failed() {
			t.Logf("function output:\n%s", logs.String())
		}
	})
	return logs
}

// upstreamScript tells the fake upstream what to do with one request: send
// the first chunk, wait for release, then finish the stream or cut it.
type upstreamScript struct {
	release chan struct{}
	cut     bool
	// endless, after release, streams until the gateway goes away (at most
	// maxEndless events), then closes cancelled.
	endless   bool
	cancelled chan struct{}
}

const maxEndless = 10000

const (
	firstContent  = "Hello"
	secondContent = " from the second chunk"
)

// fakeUpstream is an OpenAI-compatible server that streams under the test's
// control.
func fakeUpstream(t *testing.T) (url string, scripts chan upstreamScript) {
	t.Helper()
	scripts = make(chan upstreamScript, 1)
	chunk := func(content, finish string) string {
		fin := "null"
		if finish != "" {
			fin = strconv.Quote(finish)
		}
		return fmt.Sprintf(`data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":%q},"finish_reason":%s}]}`+"\n\n", content, fin)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var s upstreamScript
		select {
		case s = <-scripts:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk(firstContent, ""))
		w.(http.Flusher).Flush()
		select {
		case <-s.release:
		case <-r.Context().Done():
			return
		}
		if s.endless {
			for range maxEndless {
				if _, err := io.WriteString(w, chunk("more", "")); err != nil {
					break
				}
				if http.NewResponseController(w).Flush() != nil || r.Context().Err() != nil {
					break
				}
			}
			if r.Context().Err() != nil {
				close(s.cancelled)
			}
			return
		}
		if s.cut {
			panic(http.ErrAbortHandler) // drop the connection mid-stream
		}
		_, _ = io.WriteString(w, chunk(secondContent, "stop"))
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, scripts
}

// urlEvent is a function URL event for path with body.
func urlEvent(t *testing.T, method, path string, body any) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", "gateway-chat-stream.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	ev["rawPath"] = path
	rc := ev["requestContext"].(map[string]any)
	h := rc["http"].(map[string]any)
	h["method"], h["path"] = method, path
	delete(ev, "body")
	if body != nil {
		bb, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		ev["body"] = string(bb)
	}
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStreamingThroughRuntimeAPI runs the real gateway handler behind
// lambdahttp.Start against the Runtime API double and shows what reaches the
// Runtime API, and when.
func TestStreamingThroughRuntimeAPI(t *testing.T) {
	upstream, scripts := fakeUpstream(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	cfgYAML := fmt.Sprintf(`model_list:
  - model_name: streamer
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: %s/v1
      api_key: sk-upstream-test
router_settings:
  num_retries: 0
`, upstream)
	if err := os.WriteFile(cfg, []byte(cfgYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	api := newRuntimeAPI(t)
	logs := startChild(t, api, "GATEWAY_CONFIG="+cfg)
	deadline := time.Now().Add(10 * time.Minute).Truncate(time.Millisecond)
	chat := map[string]any{
		"model":    "streamer",
		"stream":   true,
		"messages": []map[string]string{{"role": "user", "content": "hi"}},
	}

	t.Run("first event reaches the runtime before the upstream sends the second", func(t *testing.T) {
		s := upstreamScript{release: make(chan struct{})}
		scripts <- s
		inv := api.invoke(t, urlEvent(t, "POST", "/v1/chat/completions", chat), deadline)
		var got []byte
		for !bytes.Contains(got, []byte(firstContent)) || !bytes.HasSuffix(got, []byte("\n\n")) {
			select {
			case c := <-inv.chunks:
				got = append(got, c...)
			case <-time.After(guard):
				t.Fatalf("the first SSE event never reached the Runtime API while the upstream held back the second: the response is buffered (got %q)", got)
			}
		}
		if bytes.Contains(got, []byte(secondContent)) {
			t.Fatal("the second chunk arrived before the upstream sent it")
		}
		close(s.release) // only now may the upstream send the rest
		p := inv.wait(t)
		checkStreamingPost(t, p)
		r, err := parseStreamed(p.body)
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode != 200 || !strings.HasPrefix(r.header("Content-Type"), "text/event-stream") {
			t.Errorf("prelude: status %d, headers %v", r.StatusCode, r.Headers)
		}
		data := sseData(r.Body)
		if len(data) < 3 || data[len(data)-1] != "[DONE]" || !strings.Contains(string(r.Body), secondContent) {
			t.Errorf("stream = %q", r.Body)
		}
		if et := p.trailer.Get("Lambda-Runtime-Function-Error-Type"); et != "" {
			t.Errorf("error trailer on a good stream: %q", et)
		}
	})

	t.Run("upstream cut after the stream started ends with an in-band error event", func(t *testing.T) {
		s := upstreamScript{release: make(chan struct{}), cut: true}
		close(s.release)
		scripts <- s
		inv := api.invoke(t, urlEvent(t, "POST", "/v1/chat/completions", chat), deadline)
		p := inv.wait(t)
		checkStreamingPost(t, p)
		r, err := parseStreamed(p.body)
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode != 200 {
			t.Errorf("status = %d", r.StatusCode)
		}
		data := sseData(r.Body)
		if len(data) < 2 || !strings.Contains(data[0], firstContent) {
			t.Fatalf("stream = %q", r.Body)
		}
		last := data[len(data)-1]
		var e openAIError
		if err := json.Unmarshal([]byte(last), &e); err != nil || e.Error == nil || e.Error.Message == "" {
			t.Errorf("last event %q is not an OpenAI error event", last)
		}
		if strings.Contains(string(r.Body), "[DONE]") {
			t.Error("a broken stream claims [DONE]")
		}
	})

	internal := string(apierr.JSON(apierr.New(apierr.Internal, "internal error")))
	t.Run("panic before headers is a clean 500", func(t *testing.T) {
		inv := api.invoke(t, urlEvent(t, "GET", "/test/panic-before-headers", nil), deadline)
		p := inv.wait(t)
		checkStreamingPost(t, p)
		r, err := parseStreamed(p.body)
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode != 500 || r.header("Content-Type") != "application/json" || string(r.Body) != internal {
			t.Errorf("got %d %v %q; want 500 %s", r.StatusCode, r.Headers, r.Body, internal)
		}
		if r.header("X-Upstream-Key") != "" || strings.Contains(string(p.body), "sk-secret-upstream") || strings.Contains(string(p.body), "goroutine") {
			t.Errorf("the 500 leaks the handler's state: %q", p.body)
		}
		// The child's output reaches logs through a pipe and a copying
		// goroutine: give the line a moment to arrive.
		for end := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "recovered a panic") && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(logs.String(), "recovered a panic") {
			t.Error("the panic was not logged")
		}
	})

	t.Run("panic after an SSE stream started is an in-band error event", func(t *testing.T) {
		inv := api.invoke(t, urlEvent(t, "POST", "/test/panic-mid-sse", nil), deadline)
		p := inv.wait(t)
		checkStreamingPost(t, p)
		r, err := parseStreamed(p.body)
		if err != nil {
			t.Fatal(err)
		}
		want := "data: {\"n\":1}\n\ndata: " + internal + "\n\n"
		if r.StatusCode != 200 || string(r.Body) != want {
			t.Errorf("got %d %q; want 200 %q", r.StatusCode, r.Body, want)
		}
		if et := p.trailer.Get("Lambda-Runtime-Function-Error-Type"); et != "" {
			t.Errorf("error trailer after a clean in-band error: %q", et)
		}
	})

	t.Run("panic after a JSON body started cuts the stream with error trailers", func(t *testing.T) {
		inv := api.invoke(t, urlEvent(t, "POST", "/test/panic-mid-json", nil), deadline)
		p := inv.wait(t)
		checkStreamingPost(t, p)
		r, err := parseStreamed(p.body)
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Body) != `{"partial":` {
			t.Errorf("body = %q", r.Body)
		}
		if et := p.trailer.Get("Lambda-Runtime-Function-Error-Type"); et != "Handler.Panic" {
			t.Errorf("Lambda-Runtime-Function-Error-Type = %q, want Handler.Panic (trailers %v)", et, p.trailer)
		}
		eb, err := base64.StdEncoding.DecodeString(p.trailer.Get("Lambda-Runtime-Function-Error-Body"))
		if err != nil || !bytes.Contains(eb, []byte("Handler.Panic")) || bytes.Contains(eb, []byte("mid-body failure")) {
			t.Errorf("Lambda-Runtime-Function-Error-Body = %q (%v)", eb, err)
		}
	})

	defer t.Run("a dropped response stream ends the upstream call at its next event", func(t *testing.T) {
		// Lambda does not stop a streaming function whose client went away;
		// what a function can see is the Runtime API failing its response
		// stream. net/http notices that only on the next write: then the
		// handler's context is cancelled (and aws-lambda-go exits the process),
		// so the upstream stream stops.
		testResponseDropped(t, api, scripts, urlEvent(t, "POST", "/v1/chat/completions", chat), deadline)
	})

	t.Run("request deadline is the Lambda deadline minus the margin", func(t *testing.T) {
		inv := api.invoke(t, urlEvent(t, "GET", "/test/deadline", nil), deadline)
		p := inv.wait(t)
		r, err := parseStreamed(p.body)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			HasDeadline bool  `json:"has_deadline"`
			DeadlineMS  int64 `json:"deadline_ms"`
		}
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatal(err)
		}
		if want := deadline.Add(-childMargin).UnixMilli(); !got.HasDeadline || got.DeadlineMS != want {
			t.Errorf("handler deadline = %+v, want %d", got, want)
		}
	})
}

// The last subtest: the function does not survive it.
func testResponseDropped(t *testing.T, api *runtimeAPI, scripts chan upstreamScript, ev []byte, deadline time.Time) {
	s := upstreamScript{release: make(chan struct{}), endless: true, cancelled: make(chan struct{})}
	scripts <- s
	api.mu.Lock()
	api.seq++
	inv := &invocation{id: fmt.Sprintf("inv-%d", api.seq), event: ev, deadline: deadline,
		chunks: make(chan []byte, 4096), done: make(chan *posted, 1), dropAfter: []byte(firstContent)}
	api.mu.Unlock()
	select {
	case api.next <- inv:
	case <-time.After(guard):
		t.Fatal("the function never asked for the next invocation")
	}
	if p := inv.wait(t); p.kind != "dropped" {
		t.Fatalf("response ended as %s before the drop", p.kind)
	}
	close(s.release) // the upstream streams on, until the function stops it
	select {
	case <-s.cancelled:
	case <-time.After(guard):
		t.Fatalf("the upstream call went on after the response stream was dropped (%d events later)", maxEndless)
	}
}

// checkStreamingPost checks the wire form of a streamed response POST.
func checkStreamingPost(t *testing.T, p *posted) {
	t.Helper()
	if p.kind != "response" {
		t.Fatalf("the function POSTed to /%s: %s", p.kind, p.body)
	}
	if p.readErr != nil {
		t.Errorf("reading the response body: %v", p.readErr)
	}
	if ct := p.header.Get("Content-Type"); ct != "application/vnd.awslambda.http-integration-response" {
		t.Errorf("Content-Type = %q", ct)
	}
	if len(p.transferEncoding) != 1 || p.transferEncoding[0] != "chunked" {
		t.Errorf("Transfer-Encoding = %v, want chunked", p.transferEncoding)
	}
	for _, k := range []string{"Lambda-Runtime-Function-Error-Type", "Lambda-Runtime-Function-Error-Body"} {
		if _, ok := p.trailer[k]; !ok {
			t.Errorf("trailer %s not declared (trailers %v)", k, p.trailer)
		}
	}
}
