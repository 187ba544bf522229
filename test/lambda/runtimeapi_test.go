package lambda_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
