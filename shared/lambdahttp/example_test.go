package lambdahttp_test

import (
	"io"
	"net/http"
	"os"
	"time"

	"github.com/sluice-gw/sluice/shared/lambdahttp"
)

// A main that serves the same handler locally and, inside Lambda, through a
// streaming function URL (build with -tags lambda.norpc).
func ExampleStart() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{"one", "two"} {
			_, _ = io.WriteString(w, "data: "+ev+"\n\n")
			w.(http.Flusher).Flush() // on its way to the client now
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		lambdahttp.Start(h, lambdahttp.WithDeadlineMargin(2*time.Second)) // never returns
	}
	_ = http.ListenAndServe("127.0.0.1:4000", h)
}
