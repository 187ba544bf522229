package shutdown_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// upstream is a fake OpenAI that streams slowly: /slow sends 15 chunks
// over about 3 s and its usage; /endless sends a chunk every 200 ms until
// the gateway hangs up (or 40 s pass), so that only the drain deadline
// ends it; /fast answers a completion (not streamed) at once.
func upstream(t *testing.T) *httptest.Server {
	chunk := func(w io.Writer, body string) {
		fmt.Fprintf(w, "data: %s\n\n", body)
		w.(http.Flusher).Flush()
	}
	delta := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}`
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if strings.HasPrefix(r.URL.Path, "/fast") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c2","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		n, end := 15, time.After(40*time.Second)
		if strings.HasPrefix(r.URL.Path, "/endless") {
			n = 1 << 30
		}
		for i := 0; i < n; i++ {
			chunk(w, delta)
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			case <-end:
				return
			}
		}
		chunk(w, `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		chunk(w, `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":15,"total_tokens":20}}`)
		chunk(w, "[DONE]")
	}))
	t.Cleanup(s.Close)
	return s
}

// config routes models "slow", "endless" and "fast" to the fake upstream.
func config(upstreamURL string) string {
	return `model_list:
  - model_name: slow
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: ` + upstreamURL + `/slow/v1
      api_key: sk-upstream
      input_cost_per_token: 0.000001
      output_cost_per_token: 0.000002
  - model_name: endless
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: ` + upstreamURL + `/endless/v1
      api_key: sk-upstream
      input_cost_per_token: 0.000001
      output_cost_per_token: 0.000002
  - model_name: fast
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: ` + upstreamURL + `/fast/v1
      api_key: sk-upstream
      input_cost_per_token: 0.000001
      output_cost_per_token: 0.000002
router_settings:
  num_retries: 0
`
}

const masterKey = "sk-shutdown-master"

// streams starts slow and endless streamed completions at g and returns,
// once each has its first chunk, the call ids of those answered (200 and
// a call id); wait returns when every body has ended.
func streams(t *testing.T, g *gateway, slow, endless int) (answered []string, wait func()) {
	t.Helper()
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		started sync.WaitGroup
		failed  atomic.Int64
	)
	one := func(model string) {
		defer wg.Done()
		first := sync.OnceFunc(started.Done)
		defer first()
		body := `{"model":"` + model + `","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"count"}]}`
		req, _ := http.NewRequest(http.MethodPost, g.base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+masterKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			failed.Add(1)
			return
		}
		defer resp.Body.Close()
		id := resp.Header.Get("X-Litellm-Call-Id")
		if resp.StatusCode != http.StatusOK || id == "" {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("%s: %d %s", model, resp.StatusCode, b)
			return
		}
		mu.Lock()
		answered = append(answered, id)
		mu.Unlock()
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadBytes('\n')
			if bytes.HasPrefix(line, []byte("data: ")) {
				first()
			}
			if err != nil {
				return // the end, or the gateway cut the stream
			}
		}
	}
	for i := 0; i < slow+endless; i++ {
		model := "slow"
		if i >= slow {
			model = "endless"
		}
		wg.Add(1)
		started.Add(1)
		go one(model)
	}
	ok := make(chan struct{})
	go func() { started.Wait(); close(ok) }()
	select {
	case <-ok:
	case <-time.After(45 * time.Second):
		t.Fatalf("the streams did not start:\n%s", g.output())
	}
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d streams failed before SIGTERM:\n%s", n, g.output())
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), answered...), wg.Wait
}

// burst sends n completions (not streamed) at once and returns the call
// ids of those answered 200: a backlog for the spend publisher.
func burst(t *testing.T, g *gateway, n int) []string {
	t.Helper()
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		ids []string
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, g.base+"/v1/chat/completions",
				strings.NewReader(`{"model":"fast","messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer "+masterKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("fast: %v", err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("fast: %d %s", resp.StatusCode, b)
				return
			}
			mu.Lock()
			ids = append(ids, resp.Header.Get("X-Litellm-Call-Id"))
			mu.Unlock()
		}()
	}
	wg.Wait()
	return ids
}

// proxy is a TCP proxy in front of an emulator that delays each answer
// (a slow SQS or DynamoDB), or, once down, swallows every byte both ways
// and answers nothing (a store that is down: only a deadline ends a call).
type proxy struct {
	addr   string
	target string
	delay  time.Duration
	down   atomic.Bool
}

func startProxy(t *testing.T, target string, delay time.Duration) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), target: target, delay: delay}
	ctx, cancel := context.WithCancel(context.Background())
	var conns sync.WaitGroup
	t.Cleanup(func() { cancel(); ln.Close(); conns.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() { defer conns.Done(); p.serve(ctx, c) }()
		}
	}()
	return p
}

func (p *proxy) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { <-ctx.Done(); c.Close(); up.Close() }()
	go p.pipe(up, c, 0)    // requests
	p.pipe(c, up, p.delay) // answers, late
}

// pipe copies from src to dst, each read delay late; while p is down it
// reads and drops.
func (p *proxy) pipe(dst, src net.Conn, delay time.Duration) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.down.Load() {
			time.Sleep(delay)
			if p.down.Load() {
				continue
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}
