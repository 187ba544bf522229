package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/alerts/alertstest"
	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
)

// Local mode. Its server's bounds (app.Gateway.Server) are tested over real
// TCP on loopback: they live in net/http's connection handling, which a
// ResponseRecorder never exercises. Timeouts are short; the tests assert
// outcomes, never durations. Its budget alerts are tested at the end.

// localServer builds a memory-store gateway with the given bounds and serves
// it on a loopback port.
func localServer(t *testing.T, yaml, masterKey string, l app.LocalLimits) string {
	t.Helper()
	gw, err := app.Build(context.Background(), app.Settings{
		ConfigYAML: []byte(yaml), MasterKey: masterKey, Local: l,
		Logger: gatewaytest.Quiet(),
	})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := gw.Server()
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		gw.Close(context.Background())
	})
	return ln.Addr().String()
}

const mockYAML = `model_list:
  - model_name: m
    litellm_params: {model: mock/m}
`

// apiError decodes an OpenAI-style error body.
func apiError(t *testing.T, body []byte) (typ, code, msg string) {
	t.Helper()
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" {
		t.Fatalf("not an OpenAI error body (%v): %q", err, body)
	}
	return e.Error.Type, e.Error.Code, e.Error.Message
}

// A client that sends its headers slower than the header timeout is
// disconnected long before it is done.
func TestLocalSlowHeadersDisconnected(t *testing.T) {
	addr := localServer(t, mockYAML, "", app.LocalLimits{ReadHeaderTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// ~4,000 bytes at one per 5 ms: 20 s, a hundred times the timeout.
	req := "GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 4000) + "\r\n\r\n"
	read := make(chan error, 1)
	var got []byte
	go func() {
		var err error
		got, err = io.ReadAll(conn)
		if err == nil {
			err = io.EOF
		}
		read <- err
	}()
	sent, readErr := 0, error(nil)
loop:
	for ; sent < len(req); sent++ {
		select {
		case readErr = <-read:
			break loop
		default:
		}
		if _, err := conn.Write([]byte{req[sent]}); err != nil {
			break // the server closed: a reset on write
		}
		time.Sleep(5 * time.Millisecond)
	}
	if sent == len(req) {
		t.Fatalf("the whole request went through (%d bytes) without the server closing", sent)
	}
	if readErr == nil {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		readErr = <-read
	}
	if isTimeout(readErr) {
		t.Fatalf("the server never closed the connection: %v", readErr)
	}
	// net/http closes either silently or after a plain-text 400.
	if len(got) != 0 && !strings.HasPrefix(string(got), "HTTP/1.1 400 ") {
		t.Fatalf("the server answered a request it never fully received: %q", got)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// trickle sends a request's headers at once and its body one byte every
// 20 ms (the whole body takes seconds, the timeouts tested are 200 ms),
// and returns the response.
func trickle(t *testing.T, addr, path, key, body string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, len(body))
	if key != "" {
		head += "Authorization: Bearer " + key + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := range len(body) {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response to a trickling body: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read the response: %v", err)
	}
	return resp, b
}

// A body that trickles in slower than the body timeout gets a 408 with an
// OpenAI-style request_timeout error, on the gateway's routes and the
// admin API's alike.
func TestLocalSlowBody408(t *testing.T) {
	const master = "sk-local-master"
	addr := localServer(t, mockYAML, master, app.LocalLimits{BodyTimeout: 200 * time.Millisecond})
	long := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 100) + `"}]}`
	for _, path := range []string{"/v1/chat/completions", "/key/generate"} {
		t.Run(path, func(t *testing.T) {
			resp, body := trickle(t, addr, path, master, long)
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("status %d, want 408: %s", resp.StatusCode, body)
			}
			typ, code, msg := apiError(t, body)
			if typ != "invalid_request_error" || code != "request_timeout" || !strings.Contains(msg, "GATEWAY_BODY_TIMEOUT") {
				t.Fatalf("error %s/%s %q", typ, code, msg)
			}
		})
	}
	// A body sent at once is unaffected.
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+master)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a prompt body: status %d: %s", resp.StatusCode, b)
	}
}

// Headers over MaxHeaderBytes get net/http's 431; headers under it pass.
func TestLocalHeaderLimit431(t *testing.T) {
	addr := localServer(t, mockYAML, "", app.LocalLimits{MaxHeaderBytes: 1 << 10})
	send := func(pad int) (*http.Response, string) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		req := "GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", pad) + "\r\nConnection: close\r\n\r\n"
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("pad %d: no response: %v", pad, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	// net/http allows 4 KiB over MaxHeaderBytes before refusing.
	if resp, body := send(64 << 10); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(body, "Header Fields Too Large") {
		t.Fatalf("64 KiB header: %d %q", resp.StatusCode, body)
	}
	if resp, body := send(500); resp.StatusCode != http.StatusOK {
		t.Fatalf("500-byte header: %d %q", resp.StatusCode, body)
	}
}

// heldUpstream is an OpenAI-compatible upstream whose streams send one
// content event and then wait for a value on hold (or the client going
// away) before finishing; non-stream requests answer at once.
func heldUpstream(t *testing.T) (url string, hold chan struct{}) {
	// Each send on hold releases the oldest stream still held (in the
	// order the upstream received them), so that a test knows which of
	// its streams ends; closing hold releases them all.
	hold = make(chan struct{})
	var (
		mu      sync.Mutex
		waiting []chan struct{}
		closed  bool
	)
	go func() {
		for range hold {
			mu.Lock()
			if len(waiting) > 0 {
				close(waiting[0])
				waiting = waiting[1:]
			}
			mu.Unlock()
		}
		mu.Lock()
		for _, ch := range waiting {
			close(ch)
		}
		waiting, closed = nil, true
		mu.Unlock()
	}()
	srv := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, okBody)
			return
		}
		release := make(chan struct{})
		mu.Lock()
		if closed {
			close(release)
		} else {
			waiting = append(waiting, release)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"s","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, `data: {"id":"s","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`+"\n\ndata: [DONE]\n\n")
	})
	t.Cleanup(func() { close(hold) }) // ends the streams still held, before the server (cleaned up first) waits for them
	return srv.URL, hold
}

func heldYAML(url string) string {
	return fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/m, api_key: sk-x, api_base: %s}
`, url)
}

// openStream starts a streamed completion; on a 200 it returns the body
// after its first event arrived (the stream is then in flight).
func openStream(t *testing.T, addr string) (*http.Response, *bufio.Reader) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if resp.StatusCode == http.StatusOK {
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "data: ") {
			t.Fatalf("first event: %q %v", line, err)
		}
	}
	return resp, br
}

func refused(t *testing.T, resp *http.Response, code, setting string, limit int) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("status %d, Retry-After %q, want 503 and 1: %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	_, gotCode, msg := apiError(t, b)
	if gotCode != code || !strings.Contains(msg, setting) || !strings.Contains(msg, fmt.Sprintf(" %d ", limit)) {
		t.Fatalf("error %s %q, want %s naming %s and %d", gotCode, msg, code, setting, limit)
	}
}

// With MaxStreams 2, a third concurrent stream is refused with a clear 503;
// a non-stream request still passes; once a stream ends, a new one is
// admitted. The streams also outlive the body timeout (it bounds only the
// request body).
func TestLocalMaxStreams(t *testing.T) {
	url, hold := heldUpstream(t)
	addr := localServer(t, heldYAML(url), "", app.LocalLimits{MaxStreams: 2, BodyTimeout: 100 * time.Millisecond})
	r1, b1 := openStream(t, addr)
	r2, _ := openStream(t, addr)
	defer r2.Body.Close()
	if r1.StatusCode != 200 || r2.StatusCode != 200 {
		t.Fatalf("first two streams: %d, %d", r1.StatusCode, r2.StatusCode)
	}
	r3, _ := openStream(t, addr)
	refused(t, r3, "too_many_streams", "GATEWAY_MAX_STREAMS", 2)

	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a non-stream request beside 2 streams: %d", resp.StatusCode)
	}

	time.Sleep(300 * time.Millisecond) // three body timeouts: the streams must not be cut
	hold <- struct{}{}                 // one stream finishes
	rest, err := io.ReadAll(b1)
	r1.Body.Close()
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") || strings.Contains(string(rest), `"error"`) {
		t.Fatalf("the first stream did not end cleanly: %v %q", err, rest)
	}
	// The place is released when the handler returns, just after the
	// client saw the end: poll (each try is refused at once or admitted).
	var r4 *http.Response
	for i := 0; ; i++ {
		r, _ := openStream(t, addr)
		if r.StatusCode == http.StatusOK {
			r4 = r
			break
		}
		if i == 500 {
			refused(t, r, "too_many_streams", "GATEWAY_MAX_STREAMS", 2)
			t.Fatal("no stream admitted after one ended")
		}
		r.Body.Close()
		time.Sleep(10 * time.Millisecond)
	}
	defer r4.Body.Close()
	r5, _ := openStream(t, addr)
	refused(t, r5, "too_many_streams", "GATEWAY_MAX_STREAMS", 2)
}

// MaxRequests bounds every request in flight, streams included; /health
// is still answered.
func TestLocalMaxRequests(t *testing.T) {
	url, _ := heldUpstream(t)
	addr := localServer(t, heldYAML(url), "", app.LocalLimits{MaxRequests: 1})
	r1, _ := openStream(t, addr)
	defer r1.Body.Close()
	if r1.StatusCode != 200 {
		t.Fatalf("first stream: %d", r1.StatusCode)
	}
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	refused(t, resp, "too_many_requests", "GATEWAY_MAX_REQUESTS", 1)
	resp, err = http.Get("http://" + addr + "/health/liveliness")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/health/liveliness at the bound: %d", resp.StatusCode)
	}
}

// TestLocalBudgetAlerts: local mode (memory store, in-process queue) with
// general_settings.alerting [slack] and SLACK_WEBHOOK_URL sends one Slack
// message when a key's spend crosses its soft budget, however many calls
// cross it after, and none without budget_alerts in alert_types.
func TestLocalBudgetAlerts(t *testing.T) {
	up, _ := upstream(t, 200)
	for _, tt := range []struct {
		types string
		want  int
	}{{"", 1}, {"alert_types: [budget_alerts]", 1}, {"alert_types: [llm_exceptions]", 0}} {
		t.Run(tt.types, func(t *testing.T) {
			slack := alertstest.NewSlack(t)
			yaml := fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s/v1, api_key: k, input_cost_per_token: 0.1, output_cost_per_token: 0.1}
general_settings:
  master_key: sk-master
  alerting: [slack]
  %s
`, up.URL, tt.types)
			gw, err := buildFromEnv(t, yaml, map[string]string{"SLACK_WEBHOOK_URL": slack.URL})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			secret := "sk-alerted-key"
			soft := 1.0
			if err := gw.Keys.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secret), Settings: keys.Settings{Budget: keys.Budget{SoftBudget: &soft}}}); err != nil {
				t.Fatal(err)
			}
			for range 4 { // 0.6 USD each: the second crosses 1 USD
				rec := gatewaytest.Do(gw.Handler, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", secret, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
				if rec.Code != 200 {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				if err := gw.SpendQueue.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := gw.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if got := slack.Count("Soft Budget Crossed: Key Budget", keys.HashSecret(secret)); got != tt.want || len(slack.Messages()) != tt.want {
				t.Errorf("%d soft budget messages (%d in all), want %d: %q", got, len(slack.Messages()), tt.want, slack.Messages())
			}
		})
	}
}
