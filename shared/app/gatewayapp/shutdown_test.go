package gatewayapp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/spend"
)

// TestShutdownCutsAndRecords: streams still open at the drain deadline
// are cut, and each still has its spend log once serveLocal has returned
// (the memory store's, read in-process).
func TestShutdownCutsAndRecords(t *testing.T) {
	quit := make(chan struct{}) // ends the upstream's streams: a gateway that never cuts them fails, not hangs
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for { // until the gateway hangs up
			fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"x"}}]}`+"\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-quit:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(quit) }) // first
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	yaml := "model_list:\n  - model_name: endless\n    litellm_params:\n      model: openai/gpt-4o-mini\n      api_base: " + up.URL + "/v1\n      api_key: sk-up\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	l := startLocal(t, map[string]string{"GATEWAY_MASTER_KEY": "sk-m", "METRICS": "off"}, "-config", cfg, "-drain-timeout", "300ms")
	gw := l.gw
	base := regexp.MustCompile(`Gateway listening on (http://\S+)`).FindStringSubmatch(l.banner)[1]

	const n = 3
	ids := make(chan string, n)
	for range n {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
				strings.NewReader(`{"model":"endless","stream":true,"messages":[{"role":"user","content":"go"}]}`))
			req.Header.Set("Authorization", "Bearer sk-m")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				ids <- ""
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			_, _ = br.ReadString('\n') // the first chunk: the stream runs
			ids <- resp.Header.Get("X-Litellm-Call-Id")
			_, _ = io.Copy(io.Discard, br)
		}()
	}
	var answered []string
	for range n {
		id := <-ids
		if id == "" {
			t.Fatal("a stream was not answered")
		}
		answered = append(answered, id)
	}
	if err := l.stop(t); err != nil {
		t.Fatalf("serveLocal: %v", err)
	}
	for _, id := range answered {
		logs, err := gw.Spend.Logs(context.Background(), spend.LogQuery{RequestID: id})
		if err != nil || len(logs) != 1 {
			t.Errorf("call %s: %d spend logs (%v), want 1", id, len(logs), err)
		}
	}
}
