package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/inittrace"
)

// coldRuntimeAPI is a Lambda Runtime API (/2018-06-01/runtime/...) serving
// one function URL invocation per cold start and timing it.
type coldRuntimeAPI struct {
	addr  string
	srv   *http.Server
	event []byte

	mu  sync.Mutex
	cur *coldRun
	seq int
}

// coldRun is one cold start's instants (Unix ns on this machine's clock)
// and what the bootstrap traced.
type coldRun struct {
	exec, next1, respStart, respEnd int64
	next2                           int64
	cpuTotal                        int64 // the bootstrap's CPU time (user + system) until killed
	status                          int
	body                            string
	failure                         string
	trace                           map[string][]int64
	reqID                           string
	events                          chan string // "next1", "resp", "next2", "error"
}

func newRuntimeAPI(event []byte) (*coldRuntimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	api := &coldRuntimeAPI{addr: ln.Addr().String(), event: event}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", api.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", api.response)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", api.failed)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", api.failed)
	api.srv = &http.Server{Handler: mux}
	go api.srv.Serve(ln)
	return api, nil
}

func (api *coldRuntimeAPI) close() { api.srv.Close() }

func (api *coldRuntimeAPI) run() *coldRun {
	api.mu.Lock()
	defer api.mu.Unlock()
	return api.cur
}

func (api *coldRuntimeAPI) next(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UnixNano()
	run := api.run()
	if run == nil {
		http.Error(w, "no cold start in progress", http.StatusInternalServerError)
		return
	}
	if run.next1 != 0 { // the invocation is over: the instance would freeze here
		run.next2 = now
		run.events <- "next2"
		<-r.Context().Done()
		return
	}
	run.next1 = now
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", run.reqID)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(5*time.Minute).UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:sluice-gateway")
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0")
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(api.event)
	run.events <- "next1"
}

func (api *coldRuntimeAPI) response(w http.ResponseWriter, r *http.Request) {
	start := time.Now().UnixNano()
	run := api.run()
	if run == nil || r.PathValue("id") != run.reqID {
		http.Error(w, "unknown invocation", http.StatusBadRequest)
		return
	}
	b, err := io.ReadAll(r.Body)
	end := time.Now().UnixNano()
	run.respStart, run.respEnd = start, end
	if err != nil {
		run.failure = "reading the response: " + err.Error()
	}
	// The streamed response: a JSON prelude, 8 NUL bytes, the body.
	prelude, body, ok := bytes.Cut(b, make([]byte, 8))
	if !ok {
		run.failure = fmt.Sprintf("response without its prelude: %.200q", b)
	} else {
		var p struct {
			StatusCode int `json:"statusCode"`
		}
		if err := json.Unmarshal(prelude, &p); err != nil {
			run.failure = fmt.Sprintf("response prelude %q: %v", prelude, err)
		}
		run.status, run.body = p.StatusCode, string(body)
	}
	w.WriteHeader(http.StatusAccepted)
	run.events <- "resp"
}

func (api *coldRuntimeAPI) failed(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if run := api.run(); run != nil {
		run.failure = r.URL.Path + ": " + string(b)
		run.events <- "error"
	}
	w.WriteHeader(http.StatusAccepted)
}

// coldStart execs the bootstrap, serves it one invocation and waits until
// it asks for the next one (its spend is flushed by then), then kills it.
func (api *coldRuntimeAPI) coldStart(ctx context.Context, bootstrap, dir string, env []string, logPath string) (coldRun, error) {
	api.mu.Lock()
	api.seq++
	run := &coldRun{reqID: fmt.Sprintf("coldstart-%d-%s", api.seq, randHex(4)), events: make(chan string, 8)}
	api.cur = run
	api.mu.Unlock()
	defer func() { api.mu.Lock(); api.cur = nil; api.mu.Unlock() }()

	logf, err := os.Create(logPath)
	if err != nil {
		return coldRun{}, err
	}
	defer logf.Close()
	// A file, not a pipe: the bootstrap's writes are in it when they return.
	cmd := exec.Command(bootstrap)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = logf, logf
	run.exec = time.Now().UnixNano()
	if err := cmd.Start(); err != nil {
		return coldRun{}, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()

	timeout := time.After(30 * time.Second)
	for done := false; !done; {
		select {
		case ev := <-run.events:
			switch ev {
			case "error":
				return coldRun{}, fmt.Errorf("the bootstrap reported %s (log %s)", run.failure, logPath)
			case "next2":
				done = true
			}
		case <-exited:
			return coldRun{}, fmt.Errorf("the bootstrap exited (%s); log %s:\n%s", cmd.ProcessState, logPath, readFile(logPath))
		case <-timeout:
			return coldRun{}, fmt.Errorf("no second `next` within 30s; log %s:\n%s", logPath, readFile(logPath))
		case <-ctx.Done():
			return coldRun{}, ctx.Err()
		}
	}
	_ = cmd.Process.Kill() // frozen, then gone: its CPU time is final
	<-exited
	if ps := cmd.ProcessState; ps != nil {
		run.cpuTotal = int64(ps.UserTime() + ps.SystemTime())
	}
	if run.failure != "" {
		return coldRun{}, fmt.Errorf("%s (log %s)", run.failure, logPath)
	}
	if run.status != http.StatusOK || !strings.Contains(run.body, `"choices"`) {
		return coldRun{}, fmt.Errorf("the first response is %d %.300s, want 200 with a completion (log %s)", run.status, run.body, logPath)
	}
	// The trace line is written before the second `next`.
	for _, line := range strings.Split(readFile(logPath), "\n") {
		if rest, ok := strings.CutPrefix(line, inittrace.Prefix); ok {
			if err := json.Unmarshal([]byte(rest), &run.trace); err != nil {
				return coldRun{}, fmt.Errorf("trace line %q: %w", line, err)
			}
		}
	}
	// No trace line: a bootstrap without inittrace (an old baseline); its
	// phases print as "-".
	return *run, nil
}
