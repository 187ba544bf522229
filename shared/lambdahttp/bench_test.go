package lambdahttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/lambdahttp"
)

// BenchmarkStream serves a 20-event SSE burst (one flush before the handler
// returns, as the gateway flushes before it waits for its upstream) and
// drains it as aws-lambda-go's runtime client does (io.Copy's 32 KB reads).
// chunks/op is the number of pieces the runtime client gets: each is an
// HTTP/1.1 chunk and a write system call on the way to the Runtime API.
func BenchmarkStream(b *testing.B) {
	sse := []byte("data: " + strings.Repeat("x", 240) + "\n\n")
	h := lambdahttp.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 20 {
			w.Write(sse)
		}
		w.(http.Flusher).Flush()
	}), lambdahttp.WithLogger(quietLogger()))
	ev := event("POST", "/v1/chat/completions", "", "{}", nil)
	buf := make([]byte, 32<<10)
	chunks := 0
	b.ReportAllocs()
	for b.Loop() {
		resp, err := h(context.Background(), ev)
		if err != nil {
			b.Fatal(err)
		}
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				chunks++
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		resp.Body.(io.Closer).Close()
	}
	b.ReportMetric(float64(chunks)/float64(b.N), "chunks/op")
}
