package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/wire"
)

// costFixture is a gateway whose deployments are priced (the embedded table)
// and whose completions are collected.
type costFixture struct {
	*fixture
	mu    sync.Mutex
	calls map[string]int // OnComplete calls per call id
	done  chan *Completion
}

func newCostFixture(t *testing.T, yaml string, provider Provider) *costFixture {
	t.Helper()
	cfg := loadConfig(t, yaml)
	cfg.ResolvePrices(pricing.Default())
	logs := &gatewaytest.Logs{}
	f := &costFixture{calls: map[string]int{}, done: make(chan *Completion, 16)}
	f.fixture = serve(t, testHandler(Options{
		Config: cfg, Provider: provider, Logger: logs.Logger(), Prices: pricing.Default(),
		OnComplete: func(_ context.Context, c *Completion) {
			f.mu.Lock()
			f.calls[c.CallID]++
			f.mu.Unlock()
			f.done <- c
		},
	}))
	f.logs = logs
	return f
}

// pricedModel is a cost fixture whose one model m is openai/<model> at
// apiBase, with the rest of its config in settings.
func pricedModel(t *testing.T, model, apiBase, settings string) *costFixture {
	t.Helper()
	return newCostFixture(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/%s, api_base: %s}\n%s", model, apiBase, settings), nil)
}

// completion waits for the next Completion and checks it was reported once,
// for the call id the client saw (when it saw one).
func (f *costFixture) completion(t *testing.T, resp *http.Response) *Completion {
	t.Helper()
	var c *Completion
	select {
	case c = <-f.done:
	case <-time.After(10 * time.Second): // a bound on a hang, not a timing assertion
		t.Fatal("OnComplete was not called")
	}
	if resp != nil && resp.Header.Get("X-Litellm-Call-Id") != c.CallID {
		t.Errorf("completion for call %s, the client saw %s", c.CallID, resp.Header.Get("X-Litellm-Call-Id"))
	}
	time.Sleep(10 * time.Millisecond) // a second call would arrive now
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.calls[c.CallID]; n != 1 {
		t.Errorf("OnComplete called %d times for one request", n)
	}
	if len(f.done) != 0 {
		t.Errorf("%d more completions than requests", len(f.done))
	}
	if c.Started.IsZero() || c.Ended.Before(c.Started) || c.Latency != c.Ended.Sub(c.Started) {
		t.Errorf("times: started %v ended %v latency %v", c.Started, c.Ended, c.Latency)
	}
	return c
}

func price(t *testing.T, key string) pricing.Price {
	t.Helper()
	p, ok := pricing.Default().Get(key)
	if !ok {
		t.Fatalf("no price for %s", key)
	}
	return p
}

const cachedCompletion = `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":200,"total_tokens":1200,"prompt_tokens_details":{"cached_tokens":600}}}`

func TestCompletionJSON(t *testing.T) {
	up := gatewaytest.Answering(t, 200, "", cachedCompletion)
	f := pricedModel(t, "gpt-4o-mini", up.URL, "")
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","messages":[],"user":"customer-1","metadata":{"tags":["a","b"]}}`)
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 200 || out != cachedCompletion {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	c := f.completion(t, resp)
	u := wire.Usage{PromptTokens: 1000, CompletionTokens: 200, TotalTokens: 1200, CachedTokens: 600}
	want := price(t, "gpt-4o-mini").CostNanos(u) // 400*150 + 600*75 + 200*600 nano-USD
	if want != 225_000 {
		t.Fatalf("price changed: %d", want)
	}
	if c.Usage != u || !c.HasUsage || c.UsageEstimated || c.CostNanos != want || !c.CostKnown {
		t.Errorf("usage %+v has %v estimated %v cost %d known %v", c.Usage, c.HasUsage, c.UsageEstimated, c.CostNanos, c.CostKnown)
	}
	if got := resp.Header.Get("X-Litellm-Response-Cost"); got != "0.000225" {
		t.Errorf("x-litellm-response-cost = %q", got)
	}
	if c.Model != "m" || c.EndUser != "customer-1" || strings.Join(c.Tags, ",") != "a,b" || c.Stream || c.Operation != wire.OpChat {
		t.Errorf("request fields: model %q user %q tags %v stream %v op %v", c.Model, c.EndUser, c.Tags, c.Stream, c.Operation)
	}
	if c.Attempt == nil || c.Attempt.Deployment.Model != "gpt-4o-mini" || c.Attempts != 1 || c.Retries != 0 || c.Fallbacks != 0 {
		t.Errorf("attempts: %+v %d", c.Attempt, c.Attempts)
	}
	if c.StatusCode != 200 || c.Err != nil || c.ClientGone {
		t.Errorf("status %d err %v gone %v", c.StatusCode, c.Err, c.ClientGone)
	}
}

func TestCompletionStream(t *testing.T) {
	usage := `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":4,"total_tokens":34}}` + "\n\n"
	for _, asked := range []bool{false, true} {
		t.Run(fmt.Sprintf("include_usage=%v", asked), func(t *testing.T) {
			var upBody []byte
			up := sseUpstream(t, []string{roleChunk, chunk("Hel"), chunk("lo"), usage, "data: [DONE]\n\n"}, nil, false, &upBody)
			defer up.Close()
			f := pricedModel(t, "gpt-4o", up.URL, "")
			body := `{"model":"m","stream":true,"messages":[]}`
			if asked {
				body = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
			}
			resp := f.post(t, "/v1/chat/completions", "", body)
			out := gatewaytest.ReadAll(t, resp.Body)
			if got := strings.Contains(out, `"usage"`); got != asked {
				t.Errorf("client saw the usage chunk = %v, want %v:\n%s", got, asked, out)
			}
			if !strings.Contains(string(upBody), `"include_usage":true`) {
				t.Errorf("usage not asked of the upstream: %s", upBody)
			}
			c := f.completion(t, resp)
			u := wire.Usage{PromptTokens: 30, CompletionTokens: 4, TotalTokens: 34}
			if c.Usage != u || c.UsageEstimated || c.CostNanos != price(t, "gpt-4o").CostNanos(u) || !c.CostKnown || c.CostNanos == 0 {
				t.Errorf("usage %+v estimated %v cost %d known %v", c.Usage, c.UsageEstimated, c.CostNanos, c.CostKnown)
			}
			if !c.Stream || c.StatusCode != 200 || c.Err != nil || c.ClientGone || c.Attempts != 1 {
				t.Errorf("stream %v status %d err %v gone %v attempts %d", c.Stream, c.StatusCode, c.Err, c.ClientGone, c.Attempts)
			}
		})
	}
}

// A stream with no usage (a provider that ignores include_usage) is costed
// from the prompt estimate and the text received.
func TestCompletionStreamWithoutUsageEstimated(t *testing.T) {
	var upBody []byte
	up := sseUpstream(t, []string{roleChunk, chunk("Hello"), chunk(" there, "), chunk("friend"), "data: [DONE]\n\n"}, nil, false, &upBody)
	defer up.Close()
	f := pricedModel(t, "gpt-4o", up.URL, "")
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hello"}]}`)
	gatewaytest.ReadAll(t, resp.Body)
	c := f.completion(t, resp)
	sent := wire.EstimateTokens(upBody)                                                           // the prompt as the upstream got it
	u := wire.Usage{PromptTokens: int64(sent), CompletionTokens: 5, TotalTokens: int64(sent) + 5} // 19 bytes of text
	if c.Usage != u || !c.HasUsage || !c.UsageEstimated {
		t.Errorf("usage %+v (want %+v) has %v estimated %v", c.Usage, u, c.HasUsage, c.UsageEstimated)
	}
	if c.CostNanos != price(t, "gpt-4o").CostNanos(u) || !c.CostKnown {
		t.Errorf("cost %d known %v", c.CostNanos, c.CostKnown)
	}
}

func TestCompletionUpstreamFailure(t *testing.T) {
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"boom"}}`)
	})
	f := pricedModel(t, "gpt-4o", up.URL, "router_settings: {num_retries: 1}\n")
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","messages":[]}`)
	gatewaytest.ReadAll(t, resp.Body)
	c := f.completion(t, resp)
	if c.StatusCode != resp.StatusCode || c.StatusCode != 502 || apierr.KindOf(c.Err) != apierr.UpstreamServer {
		t.Errorf("status %d (client saw %d) err %v", c.StatusCode, resp.StatusCode, c.Err)
	}
	if c.HasUsage || c.CostNanos != 0 || !c.CostKnown || c.Attempts != 2 || c.Retries != 1 || c.Attempt == nil {
		t.Errorf("nothing billed: usage %v cost %d known %v; attempts %d retries %d", c.HasUsage, c.CostNanos, c.CostKnown, c.Attempts, c.Retries)
	}
	if resp.Header.Get("X-Litellm-Response-Cost") != "" {
		t.Error("cost header on an error")
	}
}

// Every attempt the provider billed counts: here a stream that reported
// usage, then failed before its first content and was retried elsewhere.
func TestCompletionCostSumsBilledAttempts(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			io.WriteString(w, `data: {"id":"c","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":0,"total_tokens":100}}`+"\n\n")
			io.WriteString(w, `data: {"error":{"message":"overloaded","type":"server_error"}}`+"\n\n")
			return
		}
		io.WriteString(w, chunk("ok"))
		io.WriteString(w, `data: {"id":"c","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":1,"total_tokens":101}}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	})
	f := pricedModel(t, "gpt-4o", up.URL, "router_settings: {num_retries: 1}\n")
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","stream":true,"messages":[]}`)
	if out := gatewaytest.ReadAll(t, resp.Body); !strings.Contains(out, `"ok"`) || strings.Contains(out, "usage") {
		t.Fatalf("stream = %s", out)
	}
	c := f.completion(t, resp)
	p := price(t, "gpt-4o")
	first, second := wire.Usage{PromptTokens: 100, TotalTokens: 100}, wire.Usage{PromptTokens: 100, CompletionTokens: 1, TotalTokens: 101}
	if c.Attempts != 2 || c.Usage != first.Add(second) || c.CostNanos != p.CostNanos(first)+p.CostNanos(second) || !c.CostKnown {
		t.Errorf("attempts %d usage %+v cost %d known %v", c.Attempts, c.Usage, c.CostNanos, c.CostKnown)
	}
}

// A client that goes away mid-stream: the completion still comes, once,
// with the output so far estimated and ClientGone set.
func TestCompletionClientDisconnectMidStream(t *testing.T) {
	f := pricedModel(t, "gpt-4o", stalling(t, "partial answer", nil).URL, "")
	resp := f.leaveMidStream(t, `{"model":"m","stream":true}`)
	c := f.completion(t, resp)
	if !c.ClientGone || c.StatusCode != 200 || c.Err == nil {
		t.Errorf("gone %v status %d err %v", c.ClientGone, c.StatusCode, c.Err)
	}
	if !c.HasUsage || !c.UsageEstimated || c.Usage.CompletionTokens != 4 || c.CostNanos <= 0 || !c.CostKnown { // 14 bytes of text
		t.Errorf("usage %+v estimated %v cost %d", c.Usage, c.UsageEstimated, c.CostNanos)
	}
}

// A stream the upstream breaks after content is billed for what came.
func TestCompletionStreamBrokenByUpstream(t *testing.T) {
	up := sseUpstream(t, []string{chunk("12345678")}, nil, true, nil)
	defer up.Close()
	f := pricedModel(t, "gpt-4o", up.URL, "")
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","stream":true,"messages":[]}`)
	gatewaytest.ReadAll(t, resp.Body)
	c := f.completion(t, resp)
	if apierr.KindOf(c.Err) != apierr.StreamBroken || c.StatusCode != 200 || c.ClientGone {
		t.Errorf("err %v status %d gone %v", c.Err, c.StatusCode, c.ClientGone)
	}
	if !c.UsageEstimated || c.Usage.CompletionTokens != 2 || c.CostNanos <= 0 {
		t.Errorf("usage %+v estimated %v cost %d", c.Usage, c.UsageEstimated, c.CostNanos)
	}
}

// A deployment with no price: the cost is unknown, not $0, and no cost
// header is sent.
func TestCompletionUnknownPrice(t *testing.T) {
	up := gatewaytest.Answering(t, 200, "", completion)
	f := pricedModel(t, "house-model", up.URL, "")
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","messages":[]}`)
	gatewaytest.ReadAll(t, resp.Body)
	c := f.completion(t, resp)
	if !c.HasUsage || c.CostKnown || c.CostNanos != 0 {
		t.Errorf("usage %v known %v cost %d", c.HasUsage, c.CostKnown, c.CostNanos)
	}
	if _, ok := resp.Header["X-Litellm-Response-Cost"]; ok {
		t.Errorf("cost header for an unknown cost: %q", resp.Header.Get("X-Litellm-Response-Cost"))
	}
}

// A wildcard deployment prices each model it serves, and warns once about
// a model with no price.
func TestCompletionWildcardPriced(t *testing.T) {
	up := gatewaytest.Answering(t, 200, "", completion) // 10 prompt, 2 completion tokens
	f := newCostFixture(t, fmt.Sprintf("model_list:\n  - model_name: \"*\"\n    litellm_params: {model: openai/*, api_base: %s}\n", up.URL), nil)
	u := wire.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}
	for _, model := range []string{"gpt-4.1-mini", "o3-mini"} {
		resp := f.post(t, "/v1/chat/completions", "", `{"model":"`+model+`","messages":[]}`)
		gatewaytest.ReadAll(t, resp.Body)
		c := f.completion(t, resp)
		if want := price(t, model).CostNanos(u); c.CostNanos != want || !c.CostKnown {
			t.Errorf("%s: cost %d known %v, want %d", model, c.CostNanos, c.CostKnown, want)
		}
	}
	for range 2 {
		resp := f.post(t, "/v1/chat/completions", "", `{"model":"no-such-model","messages":[]}`)
		gatewaytest.ReadAll(t, resp.Body)
		if c := f.completion(t, resp); c.CostKnown {
			t.Error("an unknown model's cost is known")
		}
	}
	if n := strings.Count(f.logs.String(), "no price for deployment"); n != 1 {
		t.Errorf("%d warnings for one unpriced model, want 1", n)
	}
}

// Without usage in a JSON response, the text of the answer is counted.
func TestCompletionJSONWithoutUsageEstimated(t *testing.T) {
	const answer = `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"twelve bytes"},"finish_reason":"stop"}]}`
	var upBody []byte
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		upBody, _ = io.ReadAll(r.Body)
		io.WriteString(w, answer)
	})
	f := pricedModel(t, "gpt-4o", up.URL, "")
	resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","messages":[]}`)
	gatewaytest.ReadAll(t, resp.Body)
	c := f.completion(t, resp)
	prompt := int64(wire.EstimateTokens(upBody))
	u := wire.Usage{PromptTokens: prompt, CompletionTokens: 3, TotalTokens: prompt + 3}
	if !c.UsageEstimated || c.Usage != u || c.CostNanos != price(t, "gpt-4o").CostNanos(u) {
		t.Errorf("usage %+v (want %+v) estimated %v cost %d", c.Usage, u, c.UsageEstimated, c.CostNanos)
	}
	if resp.Header.Get("X-Litellm-Response-Cost") != pricing.USD(c.CostNanos) {
		t.Errorf("cost header %q", resp.Header.Get("X-Litellm-Response-Cost"))
	}
}

func TestCompletionEmbeddings(t *testing.T) {
	f := newCostFixture(t, "model_list:\n  - model_name: emb\n    litellm_params: {model: mock/text-embedding-3-small}\n", nil)
	resp := f.post(t, "/v1/embeddings", "", `{"model":"emb","input":["a","b"]}`)
	gatewaytest.ReadAll(t, resp.Body)
	c := f.completion(t, resp)
	if c.Operation != wire.OpEmbeddings || !c.HasUsage || c.UsageEstimated || c.Usage.PromptTokens == 0 || c.Usage.CompletionTokens != 0 {
		t.Errorf("op %v usage %+v", c.Operation, c.Usage)
	}
	if want := price(t, "text-embedding-3-small").CostNanos(c.Usage); c.CostNanos != want || want == 0 || !c.CostKnown {
		t.Errorf("cost %d, want %d", c.CostNanos, want)
	}
}

// Requests that fail before the router still report, once; a request that
// fails authentication does not.
func TestCompletionEarlyErrors(t *testing.T) {
	f := newCostFixture(t, "model_list:\n  - model_name: m\n    litellm_params: {model: mock/gpt-4o-mini}\n", nil)
	for _, tt := range []struct {
		name, body string
		status     int
	}{
		{"bad json", `{"model":`, 400},
		{"no model", `{"messages":[]}`, 400},
		{"unknown model", `{"model":"nope"}`, 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.post(t, "/v1/chat/completions", "", tt.body)
			gatewaytest.ReadAll(t, resp.Body)
			c := f.completion(t, resp)
			if c.StatusCode != tt.status || resp.StatusCode != tt.status || c.Err == nil || c.HasUsage || !c.CostKnown || c.CostNanos != 0 {
				t.Errorf("status %d (client %d) err %v usage %v", c.StatusCode, resp.StatusCode, c.Err, c.HasUsage)
			}
		})
	}

	locked := newCostFixture(t, "model_list:\n  - model_name: m\n    litellm_params: {model: mock/gpt-4o-mini}\ngeneral_settings: {master_key: sk-master}\n", nil)
	resp := locked.post(t, "/v1/chat/completions", "sk-wrong", `{"model":"m"}`)
	gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 401 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	select {
	case c := <-locked.done:
		t.Errorf("completion for an unauthenticated request: %+v", c)
	case <-time.After(50 * time.Millisecond):
	}
}

// A panic still reports, once: a 500 before output; after a stream
// started, the output so far is billed.
func TestCompletionPanics(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after first chunk=%v", after), func(t *testing.T) {
			f := newCostFixture(t, "model_list:\n  - model_name: m\n    litellm_params: {model: openai/gpt-4o, api_base: http://127.0.0.1:1}\n",
				panicProvider{afterFirstChunk: after})
			resp := f.post(t, "/v1/chat/completions", "", `{"model":"m","stream":true}`)
			gatewaytest.ReadAll(t, resp.Body)
			c := f.completion(t, resp)
			if c.Err == nil || apierr.KindOf(c.Err) != apierr.Internal || c.Attempt == nil || c.Attempt.Deployment.Model != "gpt-4o" {
				t.Errorf("err %v attempt %+v", c.Err, c.Attempt)
			}
			if !after {
				if c.StatusCode != 500 || c.HasUsage || c.Attempts != 1 {
					t.Errorf("status %d usage %v attempts %d", c.StatusCode, c.HasUsage, c.Attempts)
				}
				return
			}
			if c.StatusCode != 200 || !c.HasUsage || !c.UsageEstimated || c.Usage.CompletionTokens != 1 || c.CostNanos <= 0 {
				t.Errorf("status %d usage %+v estimated %v cost %d", c.StatusCode, c.Usage, c.UsageEstimated, c.CostNanos)
			}
		})
	}
}

// The embedded default config shows spend: its mock models cost something.
func TestCompletionDefaultConfigCosts(t *testing.T) {
	cfg := config.Default()
	done := make(chan *Completion, 1)
	h := testHandler(Options{Config: cfg, Logger: gatewaytest.Quiet(), OnComplete: func(_ context.Context, c *Completion) { done <- c }})
	for _, stream := range []bool{false, true} {
		rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "", fmt.Sprintf(`{"model":"gpt-4o-mini","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)))
		c := <-done
		if rec.Code != 200 || !c.CostKnown || c.CostNanos <= 0 || c.UsageEstimated {
			t.Errorf("stream=%v: status %d cost %d known %v estimated %v", stream, rec.Code, c.CostNanos, c.CostKnown, c.UsageEstimated)
		}
	}
}

// A non-streamed answer reaches the client before OnComplete runs (it is
// flushed when written): the client never waits for the log line, the
// spend event or the metrics.
func TestResponseOutBeforeOnComplete(t *testing.T) {
	cfg := config.Default()
	clientHasIt := make(chan struct{})
	sawIt := make(chan bool, 1)
	h := testHandler(Options{Config: cfg, Logger: gatewaytest.Quiet(),
		OnComplete: func(context.Context, *Completion) {
			select {
			case <-clientHasIt:
				sawIt <- true
			case <-time.After(5 * time.Second):
				sawIt <- false
			}
		}})
	srv := gatewaytest.Upstream(t, h.ServeHTTP)
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body) // Content-Length: all of it, or an error
	if err != nil || resp.StatusCode != 200 || !json.Valid(body) {
		t.Fatalf("status %d, %v: %s", resp.StatusCode, err, body)
	}
	close(clientHasIt)
	if !<-sawIt {
		t.Error("the response was held until OnComplete returned")
	}
}
