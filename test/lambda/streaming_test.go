package lambda_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

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
  - model_name: responder
    litellm_params:
      model: mock/responder
      mock_response: "Hello through Lambda"
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

	t.Run("a Responses API stream, translated, through the function URL", func(t *testing.T) {
		body := map[string]any{"model": "responder", "stream": true, "input": "hi", "store": false}
		p := api.invoke(t, urlEvent(t, "POST", "/v1/responses", body), deadline).wait(t)
		checkStreamingPost(t, p)
		r, err := parseStreamed(p.body)
		if err != nil {
			t.Fatal(err)
		}
		data := sseData(r.Body)
		if r.StatusCode != 200 || len(data) < 4 {
			t.Fatalf("status %d, stream %q", r.StatusCode, r.Body)
		}
		text := ""
		for i, d := range data {
			var ev struct {
				Type  string `json:"type"`
				Seq   int    `json:"sequence_number"`
				Delta string `json:"delta"`
			}
			if err := json.Unmarshal([]byte(d), &ev); err != nil || ev.Seq != i {
				t.Fatalf("event %d: %q (%v)", i, d, err)
			}
			if ev.Type == "response.output_text.delta" {
				text += ev.Delta
			}
		}
		if !strings.Contains(data[0], `"response.created"`) || !strings.Contains(data[len(data)-1], `"response.completed"`) || text != "Hello through Lambda" {
			t.Errorf("stream %q", r.Body)
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
