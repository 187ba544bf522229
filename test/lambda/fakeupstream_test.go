package lambda_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

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
