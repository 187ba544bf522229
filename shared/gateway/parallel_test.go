package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
)

func i64(v int64) *int64 { return &v }

// max_parallel_requests on a key bounds its requests in flight across two
// instances: with two held upstream, a third is refused 429 with LiteLLM's
// message; once they end their leases are given back. 0 admits none.
func TestKeyMaxParallel(t *testing.T) {
	var hits atomic.Int64
	hold := make(chan struct{})
	upURL := heldUpstream(t, &hits, hold)
	cfg := loadConfig(t, fmt.Sprintf("general_settings: {master_key: sk-master}\nmodel_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s}\n", upURL))
	ks, shared := keys.NewMemory(), limits.NewMemory()
	ctx := context.Background()
	two := keys.Key{Hash: keys.HashSecret("sk-two"), Settings: keys.Settings{MaxParallel: i64(2)}}
	none := keys.Key{Hash: keys.HashSecret("sk-none"), Settings: keys.Settings{MaxParallel: i64(0)}}
	for _, k := range []keys.Key{two, none} {
		if err := ks.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	a := serve(t, testHandler(Options{Config: cfg, Keys: ks, Limits: shared}))
	b := serve(t, testHandler(Options{Config: cfg, Keys: ks, Limits: shared}))

	var wg sync.WaitGroup
	for _, f := range []*fixture{a, b} {
		wg.Go(func() {
			if resp := f.post(t, "/v1/chat/completions", "sk-two", `{"model":"m"}`); resp.StatusCode != 200 {
				t.Errorf("held request: %d %s", resp.StatusCode, gatewaytest.ReadAll(t, resp.Body))
			}
		})
	}
	for deadline := time.Now().Add(10 * time.Second); hits.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	resp := b.post(t, "/v1/chat/completions", "sk-two", `{"model":"m"}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if msg, _, _ := openAIError(t, out); resp.StatusCode != 429 || !strings.Contains(msg, "Max parallel request limit reached") {
		t.Errorf("third request in flight: %d %s", resp.StatusCode, out)
	}
	if n := shared.InFlight(limits.KindKey, two.Hash, time.Now()); n != 2 {
		t.Errorf("%d leases in force, want 2", n)
	}
	close(hold)
	wg.Wait()
	// Leases are released when the request completes, just after its
	// response is written: wait for that, never past a bound.
	n := shared.InFlight(limits.KindKey, two.Hash, time.Now())
	for deadline := time.Now().Add(10 * time.Second); n != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		n = shared.InFlight(limits.KindKey, two.Hash, time.Now())
	}
	if n != 0 {
		t.Errorf("%d leases in force after the responses, want 0", n)
	}
	if resp := a.post(t, "/v1/chat/completions", "sk-two", `{"model":"m"}`); resp.StatusCode != 200 {
		t.Errorf("after the releases: %d", resp.StatusCode)
	}

	before := hits.Load()
	resp = a.post(t, "/v1/chat/completions", "sk-none", `{"model":"m"}`)
	out = gatewaytest.ReadAll(t, resp.Body)
	if msg, _, _ := openAIError(t, out); resp.StatusCode != 429 || !strings.Contains(msg, "Max parallel request limit reached") {
		t.Errorf("max_parallel_requests 0: %d %s", resp.StatusCode, out)
	}
	if hits.Load() != before {
		t.Error("max_parallel_requests 0 reached the upstream")
	}
}

// A deployment at its max_parallel_requests is a plain failure: the
// request goes to the group's other deployment.
func TestDeploymentMaxParallel(t *testing.T) {
	var full atomic.Int64
	hold := make(chan struct{})
	upFullURL := heldUpstream(t, &full, hold)
	upFree := gatewaytest.Answering(t, 200, "", completion)
	cfg := loadConfig(t, fmt.Sprintf("model_list:\n"+
		"  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s, max_parallel_requests: 1, order: 1}\n"+
		"  - model_name: m\n    litellm_params: {model: openai/y, api_base: %s, order: 2}\n", upFullURL, upFree.URL))
	f := serve(t, testHandler(Options{Config: cfg, Limits: limits.NewMemory()}))
	done := make(chan int)
	go func() { done <- f.post(t, "/v1/chat/completions", "", `{"model":"m"}`).StatusCode }()
	for deadline := time.Now().Add(10 * time.Second); full.Load() < 1 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if resp := f.post(t, "/v1/chat/completions", "", `{"model":"m"}`); resp.StatusCode != 200 || upFree.Calls.Load() != 1 {
		t.Errorf("second request: %d, other deployment served %d", resp.StatusCode, upFree.Calls.Load())
	}
	close(hold)
	if code := <-done; code != 200 {
		t.Errorf("held request: %d", code)
	}
	if full.Load() != 1 {
		t.Errorf("the bounded deployment served %d, want 1", full.Load())
	}
}

// model_rpm_limit on a key bounds its requests to that model only.
func TestKeyModelRPMLimit(t *testing.T) {
	cfg := loadConfig(t, "general_settings: {master_key: sk-master}\nmodel_list:\n  - model_name: a\n    litellm_params: {model: mock/a}\n  - model_name: b\n    litellm_params: {model: mock/b}\n")
	ks := keys.NewMemory()
	k := keys.Key{Hash: keys.HashSecret("sk-models"), Settings: keys.Settings{ModelRPM: map[string]int64{"a": 1}, ModelTPM: map[string]int64{"b": 1_000_000}}}
	if err := ks.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Minute).Add(30 * time.Second) // one window for every request
	f := serve(t, testHandler(Options{Config: cfg, Keys: ks, Limits: limits.NewMemory(), Now: func() time.Time { return at }}))
	for i, tt := range []struct {
		model  string
		status int
	}{{"a", 200}, {"a", 429}, {"b", 200}, {"b", 200}} {
		resp := f.post(t, "/v1/chat/completions", "sk-models", `{"model":"`+tt.model+`","mock_response":"hi"}`)
		out := gatewaytest.ReadAll(t, resp.Body)
		if resp.StatusCode != tt.status {
			t.Fatalf("request %d to %s: %d %s", i, tt.model, resp.StatusCode, out)
		}
		if tt.status == 429 {
			if msg, _, _ := openAIError(t, out); !strings.Contains(msg, "model_rpm_limit of 1 per minute for model a") || resp.Header.Get("Retry-After") == "" {
				t.Errorf("refusal: %s", out)
			}
		}
	}
}

// heldUpstream is the URL of an upstream that answers a completion once
// hold is closed, counting its requests in hits; a request admitted by
// mistake gives up after 20s rather than hang the test.
func heldUpstream(t *testing.T, hits *atomic.Int64, hold <-chan struct{}) string {
	return gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		hits.Add(1)
		select {
		case <-hold:
		case <-time.After(20 * time.Second):
		}
		io.WriteString(w, completion)
	}).URL
}
