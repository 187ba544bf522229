package inittrace

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func reset(enabled bool) {
	on, events, seen, emitted = enabled, nil, map[string]bool{}, false
}

func TestOffRecordsNothing(t *testing.T) {
	reset(false)
	Mark("a")
	Span("b")()
	var buf bytes.Buffer
	Emit(&buf)
	if buf.Len() != 0 || len(events) != 0 {
		t.Fatalf("tracing off recorded %v and wrote %q", events, buf.String())
	}
}

func TestEmitFirstOfEachNameOnce(t *testing.T) {
	reset(true)
	defer reset(false)
	Mark("main")
	Mark("main") // a second mark of a name is dropped
	end := Span("ssm")
	end()
	var buf bytes.Buffer
	Emit(&buf)
	Mark("late") // after Emit: dropped
	Emit(&buf)   // once only
	line, ok := strings.CutPrefix(buf.String(), Prefix)
	if !ok || strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("want one line starting with %q, got %q", Prefix, buf.String())
	}
	var got map[string][]int64
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if cpu, ok := got["cpu.main"]; ok { // unix
		if len(cpu) != 1 || cpu[0] <= 0 {
			t.Errorf("cpu.main = %v, want the CPU time used so far", cpu)
		}
		delete(got, "cpu.main")
	}
	if len(got) != 2 || len(got["main"]) != 1 || len(got["ssm"]) != 2 || got["ssm"][1] < got["ssm"][0] || got["main"][0] > got["ssm"][0] {
		t.Fatalf("got %v, want main as one instant before ssm as a span", got)
	}
}

type doer func(*http.Request) (*http.Response, error)

func (d doer) Do(r *http.Request) (*http.Response, error) { return d(r) }

func TestWrappersNameTheirSpans(t *testing.T) {
	reset(true)
	defer reset(false)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c := &http.Client{Transport: Transport(nil, func(*http.Request) string { return "upstream" })}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	clients := 0
	aws := AWSClient(func() Doer { clients++; return doer(http.DefaultClient.Do) })
	for _, target := range []string{"DynamoDB_20120810.GetItem", "DynamoDB_20120810.UpdateItem", "AmazonSQS.SendMessageBatch"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
		req.Header.Set("X-Amz-Target", target)
		if resp, err = aws.Do(req); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if !seen["upstream"] || !seen["aws:DynamoDB_20120810.GetItem"] || !seen["aws:AmazonSQS.SendMessageBatch"] {
		t.Fatalf("recorded %v", events)
	}
	if clients != 2 {
		t.Errorf("%d clients for two services", clients)
	}
}
