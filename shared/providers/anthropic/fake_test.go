package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/wire"
)

func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// fake is a fake Anthropic API: it checks the headers, records the
// translated requests and answers with its status and a body (a recorded
// event stream for streams).
type fake struct {
	mu     sync.Mutex
	bodies []string
	status int    // the status to answer with
	file   string // the testdata file to answer with; the error body when status is not 200
	srv    *httptest.Server
}

// newFake starts a fake answering every request with status and file.
func newFake(t *testing.T, status int, file string) *fake {
	f := &fake{status: status, file: file}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(b))
		f.mu.Unlock()
		status, file := f.status, f.file
		if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "sk-ant-test" || r.Header.Get("anthropic-version") != "2023-06-01" {
			w.WriteHeader(http.StatusTeapot)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad path or headers: %s"}}`, r.URL.Path)
			return
		}
		if status != 200 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, file)
			return
		}
		data, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Error(err)
			return
		}
		if strings.HasSuffix(file, ".sse") {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range strings.SplitAfter(string(data), "\n\n") { // one write per event
				io.WriteString(w, ev)
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(data)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) deployment() *config.Deployment {
	return &config.Deployment{ID: "claude-1", Provider: "anthropic", Model: "claude-sonnet-4-20250514",
		Protocol: config.ProtocolAnthropic, Implemented: true, APIBase: f.srv.URL, APIKey: "sk-ant-test"}
}

func do(t *testing.T, f *fake, stream, includeUsage bool) (*http.Response, error) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"claude-sonnet-4-20250514","messages":[{"role":"user","content":"hi"}],"stream":%v,"stream_options":{"include_usage":%v}}`, stream, includeUsage)
	return doBody(t, f.deployment(), body)
}

// doBody sends body through the provider to the fake upstream deployment d.
func doBody(t *testing.T, d *config.Deployment, body string) (*http.Response, error) {
	t.Helper()
	stream := gjson.Get(body, "stream").Bool()
	return providers.New(http.DefaultClient).Do(context.Background(), d, wire.Call{Op: wire.OpChat, Body: []byte(body), Stream: stream})
}
