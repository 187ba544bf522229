package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/cooldown/cooldowntest"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/models/ddbmodels"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// seen records which upstream was called with which key.
type seen struct {
	mu    sync.Mutex
	pairs map[string]int // "<upstream> <authorization>"
}

func (s *seen) upstream(t *testing.T, name string) *httptest.Server {
	return gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.pairs[name+" "+r.Header.Get("Authorization")]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, strings.Replace(okBody, `"content":"ok"`, `"content":"`+name+`"`, 1))
	})
}

func (s *seen) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.pairs {
		out[k] = v
	}
	return out
}

// Two instances on DynamoDB Local: a model added, updated and deleted
// through one instance's admin routes is served, changed and gone on the
// other at its first request after the reload interval (and not before:
// within the interval it reads nothing), under concurrent traffic on both,
// with no 5xx, and no request served half of a change (the old base with
// the new key, or the reverse).
func TestStoredModelsTwoInstances(t *testing.T) {
	sn := &seen{pairs: map[string]int{}}
	upBase, upA, upB := sn.upstream(t, "base"), sn.upstream(t, "upA"), sn.upstream(t, "upB")
	yaml := fmt.Sprintf(`model_list:
  - model_name: base
    litellm_params: {model: openai/x, api_base: %s, api_key: sk-base}
general_settings: {master_key: sk-master, store_model_in_db: true}
`, upBase.URL)
	names := ddblocal.Tables(t)
	clk := cooldowntest.NewClock(time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC))
	const interval = 10 * time.Second
	settings := func() app.Settings {
		return app.Settings{Tables: names, Now: clk.Now, ModelsReload: interval, ModelsWait: time.Minute, StoreTimeout: 20 * time.Second}
	}
	a, b := instance(t, yaml, settings()), instance(t, yaml, settings())

	// Traffic on both instances for the whole test; pause holds it while
	// the clock moves and the probe request runs.
	var pause sync.RWMutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var fivexx atomic.Int64
	var served atomic.Int64
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := []http.Handler{a.HTTP, b.HTTP}[i%2]
			model := []string{"base", "stored"}[i/2%2]
			for {
				select {
				case <-stop:
					return
				default:
				}
				pause.RLock()
				rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-master", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
				pause.RUnlock()
				if rec.Code >= 500 {
					fivexx.Add(1)
					t.Errorf("traffic on %s: %d %s", model, rec.Code, rec.Body)
				}
				served.Add(1)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	admin := func(method, path, body string) map[string]any {
		t.Helper()
		rec := gatewaytest.Do(a.HTTP, gatewaytest.Request(method, path, "sk-master", body))
		if rec.Code != 200 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return out
	}
	// probe calls model on h, counting h's DynamoDB calls.
	probe := func(h http.Handler, model string) (int, string, []string) {
		t.Helper()
		ctx, count := ddb.WithCallCount(context.Background())
		rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-master", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`).WithContext(ctx))
		var out struct {
			Choices []struct{ Message struct{ Content string } }
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		content := ""
		if len(out.Choices) > 0 {
			content = out.Choices[0].Message.Content
		}
		return rec.Code, content, count.Operations()
	}
	// step advances the clock to the end of the interval and checks that B
	// served the old state until then without reading the store, and the
	// new one at its first request after.
	step := func(what string, before, after func(code int, content string) bool) {
		t.Helper()
		pause.Lock()
		defer pause.Unlock()
		if code, content, _ := probe(b.HTTP, "stored"); !before(code, content) {
			t.Fatalf("%s: B served %d %q before its interval ended", what, code, content)
		}
		// The first request at this time may refresh B's one-second
		// cooldown cache (traffic may not have run since the clock moved);
		// the one after it is warm.
		probe(b.HTTP, "base")
		if _, _, ops := probe(b.HTTP, "base"); len(ops) != 0 {
			t.Fatalf("%s: a warm request within the interval made DynamoDB calls: %v", what, ops)
		}
		clk.Advance(interval)
		if code, content, _ := probe(b.HTTP, "stored"); !after(code, content) {
			t.Fatalf("%s: B served %d %q after its interval", what, code, content)
		}
	}
	missing := func(code int, _ string) bool { return code == 404 }

	// Added on A: A serves it at once, B after its interval.
	pause.Lock()
	out := admin("POST", "/model/new", `{"model_name":"stored","litellm_params":{"model":"openai/x","api_base":"`+upA.URL+`","api_key":"sk-stored-1"},"model_info":{"id":"dep-stored"}}`)
	if out["model_id"] != "dep-stored" {
		t.Fatalf("model/new: %v", out)
	}
	if code, content, _ := probe(a.HTTP, "stored"); code != 200 || content != "upA" {
		t.Fatalf("A after its own write: %d %q", code, content)
	}
	raw := rawItem(t, names.Keys, ddbmodels.PK("dep-stored"))
	if !strings.Contains(raw, "dep-stored") || strings.Contains(raw, "sk-stored-1") {
		t.Fatalf("the stored item holds the key in clear (or is missing): %s", raw)
	}
	pause.Unlock()
	step("added", missing, func(code int, c string) bool { return code == 200 && c == "upA" })

	// Updated on A (another base and another key at once).
	pause.Lock()
	admin("PATCH", "/model/dep-stored/update", `{"litellm_params":{"api_base":"`+upB.URL+`","api_key":"sk-stored-2"}}`)
	pause.Unlock()
	step("updated", func(code int, c string) bool { return code == 200 && c == "upA" }, func(code int, c string) bool { return code == 200 && c == "upB" })

	// Deleted on A.
	pause.Lock()
	admin("POST", "/model/delete", `{"id":"dep-stored"}`)
	pause.Unlock()
	step("deleted", func(code int, c string) bool { return code == 200 && c == "upB" }, missing)

	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	if fivexx.Load() != 0 || served.Load() == 0 {
		t.Fatalf("%d 5xx of %d requests", fivexx.Load(), served.Load())
	}
	for pair := range sn.snapshot() {
		switch pair {
		case "base Bearer sk-base", "upA Bearer sk-stored-1", "upB Bearer sk-stored-2":
		default:
			t.Errorf("an upstream was called as %q: a half-applied change", pair)
		}
	}
	if raw := rawItem(t, names.Keys, ddbmodels.PK("dep-stored")); raw != "map[]" {
		t.Fatalf("deleted model still in the table: %s", raw)
	}
}

// rawItem is the item pk of table as text.
func rawItem(t *testing.T, table, pk string) string {
	t.Helper()
	out, err := ddblocal.Client(t).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &table, Key: ddb.PK(pk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	text := map[string]string{}
	for k, v := range out.Item {
		if sv, ok := v.(*types.AttributeValueMemberS); ok {
			text[k] = sv.Value
		} else {
			text[k] = fmt.Sprint(v)
		}
	}
	return fmt.Sprint(text)
}
