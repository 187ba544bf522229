package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

func TestMain(m *testing.M) { os.Exit(sqslocal.With(func() int { return ddblocal.Main(m) })) }

const okBody = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`

// upstream answers with status and counts its hits.
func upstream(t *testing.T, status int) (*httptest.Server, *atomic.Int64) {
	body := `{"error":{"message":"boom"}}`
	if status == 200 {
		body = okBody
	}
	u := gatewaytest.Answering(t, status, "", body)
	return u.Server, &u.Calls
}

// instance builds one gateway on the shared DynamoDB tables, as one Lambda
// instance would be (its own SDK client and caches).
func instance(t *testing.T, yaml string, s app.Settings) *app.Gateway {
	t.Helper()
	cfg := ddblocal.Config(t)
	s.ConfigYAML = []byte(yaml)
	s.Store = app.StoreDynamoDB
	s.AWS = &cfg
	s.Emulator = true
	s.Logger = gatewaytest.Quiet()
	gw, err := app.Build(context.Background(), s)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return gw
}

func call(t *testing.T, h http.Handler, ctx context.Context, key, body string) *httptest.ResponseRecorder {
	t.Helper()
	return gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", key, body).WithContext(ctx))
}

// callCase is one request and what it should cost: its status and the
// DynamoDB calls made while it is served.
type callCase struct {
	name, key, body string
	status, calls   int
}

// countCalls serves tt's request on h and checks its status and its
// DynamoDB calls.
func countCalls(t *testing.T, h http.Handler, ctx context.Context, tt callCase) *httptest.ResponseRecorder {
	t.Helper()
	cctx, count := ddb.WithCallCount(ctx)
	rec := call(t, h, cctx, tt.key, tt.body)
	if rec.Code != tt.status {
		t.Fatalf("%s: status %d: %s", tt.name, rec.Code, rec.Body)
	}
	if count.Calls() != tt.calls {
		t.Errorf("%s: %d DynamoDB calls %v, want %d", tt.name, count.Calls(), count.Operations(), tt.calls)
	}
	return rec
}

// oneModel is a model m on one deployment at url, behind the master key
// sk-master.
func oneModel(url string) string {
	return fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s}
general_settings: {master_key: sk-master}
`, url)
}

// badThenGood is a model of two deployments, dep-bad (order 1) then
// dep-good, with no retries and the cooldown settings given.
func badThenGood(bad, good string, allowedFails, cooldownTime int) string {
	return fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, order: 1}
    model_info: {id: dep-bad}
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, order: 2}
    model_info: {id: dep-good}
router_settings: {num_retries: 0, allowed_fails: %d, cooldown_time: %d}
`, bad, good, allowedFails, cooldownTime)
}

// A cooldown one instance causes is honoured by another on its next request.
func TestCooldownSharedBetweenInstances(t *testing.T) {
	bad, badHits := upstream(t, 500)
	good, goodHits := upstream(t, 200)
	yaml := badThenGood(bad.URL, good.URL, 1, 60)
	names := ddblocal.Tables(t)
	a := instance(t, yaml, app.Settings{Tables: names})
	b := instance(t, yaml, app.Settings{Tables: names})

	// Instance b reads the (empty) cooldown state first, so its cache is warm
	// with "nothing cools": the order-1 deployment serves... and fails.
	if rec := call(t, b.Handler, context.Background(), "", `{"model":"m"}`); rec.Code != 502 {
		t.Fatalf("b first: %d %s", rec.Code, rec.Body)
	}
	// Instance a sees one more failure: past allowed_fails (1) in the
	// shared count, dep-bad cools.
	if rec := call(t, a.Handler, context.Background(), "", `{"model":"m"}`); rec.Code != 502 {
		t.Fatalf("a: %d via %s %s", rec.Code, rec.Header().Get("X-Litellm-Model-Id"), rec.Body)
	}
	if n := badHits.Load(); n != 2 {
		t.Fatalf("bad deployment hits = %d, want 2", n)
	}
	// A third instance, fresh, skips dep-bad at once.
	c := instance(t, yaml, app.Settings{Tables: names})
	rec := call(t, c.Handler, context.Background(), "", `{"model":"m"}`)
	if rec.Code != 200 || rec.Header().Get("X-Litellm-Model-Id") != "dep-good" {
		t.Fatalf("fresh instance: %d via %q: %s", rec.Code, rec.Header().Get("X-Litellm-Model-Id"), rec.Body)
	}
	if badHits.Load() != 2 || goodHits.Load() != 1 {
		t.Fatalf("hits bad=%d good=%d", badHits.Load(), goodHits.Load())
	}
}

// Two instances with a clock moved past b's cooldown cache TTL: b sees the
// cooldown a recorded without restarting.
func TestCooldownSeenAfterCacheTTL(t *testing.T) {
	bad, badHits := upstream(t, 500)
	good, _ := upstream(t, 200)
	yaml := badThenGood(bad.URL, good.URL, 0, 600)
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	names := ddblocal.Tables(t)
	a := instance(t, yaml, app.Settings{Tables: names, Now: clock, CooldownCacheTTL: time.Second})
	b := instance(t, yaml, app.Settings{Tables: names, Now: clock, CooldownCacheTTL: time.Second})
	if rec := call(t, a.Handler, context.Background(), "", `{"model":"m"}`); rec.Code != 502 {
		t.Fatalf("a: %d", rec.Code)
	}
	now.Add(int64(2 * time.Second)) // past b's cache TTL (it has not read yet anyway)
	rec := call(t, b.Handler, context.Background(), "", `{"model":"m"}`)
	if rec.Header().Get("X-Litellm-Model-Id") != "dep-good" || badHits.Load() != 1 {
		t.Fatalf("b went to %q; bad hits %d", rec.Header().Get("X-Litellm-Model-Id"), badHits.Load())
	}
}

// With a TPM limit, the real usage replaces the estimate after the call: one
// admission before, one correction after.
func TestTPMCorrection(t *testing.T) {
	up, _ := upstream(t, 200)
	yaml := oneModel(up.URL)
	gw := instance(t, yaml, app.Settings{Tables: ddblocal.Tables(t)})
	secret := "sk-tpm-key"
	ctx := context.Background()
	if err := gw.Keys.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secret), Settings: keys.Settings{TPMLimit: 1000}}); err != nil {
		t.Fatal(err)
	}
	call(t, gw.Handler, ctx, secret, `{"model":"m"}`) // warm the caches
	cctx, count := ddb.WithCallCount(ctx)
	rec := call(t, gw.Handler, cctx, secret, `{"model":"m","max_tokens":500}`)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ops := count.Operations(); len(ops) != 2 {
		t.Fatalf("calls = %v, want the admission and one correction", ops)
	}
	// Estimates: ~500 tokens admitted, 6 used. Were the estimate kept, the
	// next two 500-token requests could not both fit in 1000 TPM.
	for i := 0; i < 2; i++ {
		if rec := call(t, gw.Handler, ctx, secret, `{"model":"m","max_tokens":400}`); rec.Code != 200 {
			t.Fatalf("request %d after correction: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec = call(t, gw.Handler, ctx, secret, `{"model":"m","max_tokens":990}`)
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("over the TPM limit: %d %s", rec.Code, rec.Body)
	}
}

// Several instances, many concurrent requests, one key limited to 50 RPM:
// exactly 50 reach the upstream, every other one gets 429.
func TestKeyLimitExactAcrossInstances(t *testing.T) {
	up, hits := upstream(t, 200)
	yaml := oneModel(up.URL)
	names := ddblocal.Tables(t)
	// A fixed clock keeps every request in one window.
	at := time.Now().UTC().Truncate(time.Minute).Add(10 * time.Second)
	clock := func() time.Time { return at }
	const instances, workers, perWorker, limit = 4, 16, 2, 50
	var gws []*app.Gateway
	for i := 0; i < instances; i++ {
		// A generous store timeout: on an emulator shared with the rest of
		// the suite an admission can take seconds, and a timed-out one
		// fails open (admits uncounted), which is not what this test is about.
		gws = append(gws, instance(t, yaml, app.Settings{Tables: names, Now: clock, StoreTimeout: 30 * time.Second}))
	}
	secret := "sk-limited"
	if err := gws[0].Keys.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret(secret), Settings: keys.Settings{RPMLimit: limit}}); err != nil {
		t.Fatal(err)
	}
	var ok, limited, other atomic.Int64
	done := make(chan struct{})
	for i := 0; i < instances*workers; i++ {
		go func(h http.Handler) {
			defer func() { done <- struct{}{} }()
			for j := 0; j < perWorker; j++ {
				switch rec := call(t, h, context.Background(), secret, `{"model":"m"}`); rec.Code {
				case 200:
					ok.Add(1)
				case 429:
					limited.Add(1)
				default:
					other.Add(1)
					t.Errorf("status %d: %s", rec.Code, rec.Body)
				}
			}
		}(gws[i%instances].Handler)
	}
	for i := 0; i < instances*workers; i++ {
		<-done
	}
	if ok.Load() != limit || hits.Load() != limit || limited.Load() != instances*workers*perWorker-limit {
		t.Fatalf("ok=%d limited=%d other=%d upstream=%d; want exactly %d admitted", ok.Load(), limited.Load(), other.Load(), hits.Load(), limit)
	}
}

const adminYAML = `model_list:
  - model_name: m1
    litellm_params: {model: mock/m1, mock_response: "one"}
  - model_name: m2
    litellm_params: {model: mock/m2, mock_response: "two"}
general_settings:
  master_key: sk-admin-master
`

// TestRevocationAcrossInstances: a change made through one instance's admin
// API (a blocked, deleted, regenerated or expired key, a blocked team, a
// changed models list) takes effect on another instance, with its own key
// cache, once its key cache TTL has passed, and not before.
func TestRevocationAcrossInstances(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 5, 6, 7, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	names := ddblocal.Tables(t)
	settings := app.Settings{Tables: names, Now: clock, KeyCacheTTL: time.Second}
	a := instance(t, adminYAML, settings) // serves the admin calls
	b := instance(t, adminYAML, settings) // serves the chats

	admin := func(path, body string) map[string]any {
		t.Helper()
		w := gatewaytest.Do(a.HTTP, gatewaytest.Request(http.MethodPost, path, "sk-admin-master", body))
		if w.Code != 200 {
			t.Fatalf("%s %s: %d %s", path, body, w.Code, w.Body)
		}
		var m map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &m)
		return m
	}
	chat := func(key, model string) int {
		return gatewaytest.Do(b.HTTP, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", key, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)).Code
	}
	// takesEffect checks b still answers before (cached) and after the TTL.
	takesEffect := func(name, key, model string, change func(), want int) {
		t.Helper()
		if code := chat(key, model); code != 200 {
			t.Fatalf("%s: before the change: %d", name, code)
		}
		change()
		if code := chat(key, model); code != 200 {
			t.Fatalf("%s: within the cache TTL the other instance still answers from its cache: got %d", name, code)
		}
		advance(time.Second)
		if code := chat(key, model); code != want {
			t.Fatalf("%s: after the key cache TTL: %d, want %d", name, code, want)
		}
	}
	newKey := func(body string) string {
		return admin("/key/generate", body)["key"].(string)
	}

	k := newKey(`{}`)
	takesEffect("blocked key", k, "m1", func() { admin("/key/block", `{"key":"`+k+`"}`) }, 401)

	k = newKey(`{}`)
	takesEffect("deleted key", k, "m1", func() { admin("/key/delete", `{"keys":["`+k+`"]}`) }, 401)

	k = newKey(`{}`)
	var regenerated string
	takesEffect("regenerated key (old secret)", k, "m1", func() {
		regenerated = admin("/key/regenerate", `{"key":"`+k+`"}`)["key"].(string)
	}, 401)
	if code := chat(regenerated, "m1"); code != 200 {
		t.Fatalf("the regenerated secret: %d", code)
	}

	k = newKey(`{"duration":"2s"}`)
	takesEffect("expired key", k, "m1", func() { advance(time.Second) }, 401)

	admin("/team/new", `{"team_id":"tb"}`)
	k = newKey(`{"team_id":"tb"}`)
	takesEffect("blocked team", k, "m1", func() { admin("/team/block", `{"team_id":"tb"}`) }, 401)

	k = newKey(`{"models":["m1"]}`)
	takesEffect("changed models", k, "m1", func() { admin("/key/update", `{"key":"`+k+`","models":["m2"]}`) }, 403)
	if code := chat(k, "m2"); code != 200 {
		t.Fatalf("the newly allowed model: %d", code)
	}
}
