package lambdahttp_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/lambdahttp"
)

// The after-response hook runs once, when the runtime closes the response
// (after its POST, so after the client has the last byte), after the
// handler returned, with the invocation's deadline.
func TestAfterResponse(t *testing.T) {
	var handlerDone, hookRuns atomic.Int32
	hookSaw := make(chan bool, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "data: [DONE]\n\n")
		handlerDone.Store(1)
	})
	deadline := time.Now().Add(time.Minute)
	hook := lambdahttp.WithAfterResponse(func(ctx context.Context) {
		hookRuns.Add(1)
		d, ok := ctx.Deadline()
		hookSaw <- handlerDone.Load() == 1 && ok && d.Equal(deadline) && ctx.Err() == nil
	})
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	resp, err := lambdahttp.Wrap(h, lambdahttp.WithLogger(quietLogger()), hook)(ctx, event("POST", "/v1/chat/completions", "", "{}", nil))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "data: 1\n\ndata: [DONE]\n\n" {
		t.Fatalf("body %q, %v", body, err)
	}
	if hookRuns.Load() != 0 {
		t.Fatal("hook ran before the runtime closed the response")
	}
	resp.Close()
	resp.Close()
	select {
	case ok := <-hookSaw:
		if !ok {
			t.Error("hook ran before the handler returned, or without the invocation's live deadline")
		}
	case <-time.After(guard):
		t.Fatal("hook did not run")
	}
	if hookRuns.Load() != 1 {
		t.Errorf("hook ran %d times, want once", hookRuns.Load())
	}
}

// A response the runtime gave up on early: the hook still waits for the
// handler (whose context is cancelled) before it runs.
func TestAfterResponseWaitsForHandler(t *testing.T) {
	release := make(chan struct{})
	var handlerDone atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		<-r.Context().Done()
		<-release
		handlerDone.Store(1)
	})
	ran := make(chan bool, 1)
	resp, err := lambdahttp.Wrap(h, lambdahttp.WithLogger(quietLogger()), lambdahttp.WithAfterResponse(func(context.Context) {
		ran <- handlerDone.Load() == 1
	}))(context.Background(), event("GET", "/", "", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(50 * time.Millisecond); close(release) }()
	resp.Close()
	if ok := <-ran; !ok {
		t.Error("hook ran while the handler was still running")
	}
}
