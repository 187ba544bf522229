package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
)

// The spend queue's redelivery window (template.yaml): a failed consumer
// batch comes back after the visibility timeout, up to maxReceiveCount
// receives, each handled within the spend function's timeout.
const (
	queueVisibility  = 180 * time.Second
	queueMaxReceives = 5
	spendFnTimeout   = 30 * time.Second
)

// A strict-budget hold outlives the request (its deadline, or the router's
// timeout) by limits.HoldGrace, which covers the queue's redelivery window: a
// spend event delivered late still finds its hold, so its cost replaces
// the reservation instead of landing on top of spend admitted since the
// sweeper released it.
func TestHoldOutlivesRedelivery(t *testing.T) {
	if w := queueMaxReceives*queueVisibility + spendFnTimeout; limits.HoldGrace < w {
		t.Fatalf("limits.HoldGrace %v shorter than the queue's redelivery window %v", limits.HoldGrace, w)
	}
	up := gatewaytest.Answering(t, http.StatusOK, "", `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
	cfg := loadConfig(t, `model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: `+up.URL+`, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
general_settings: {master_key: sk-master, strict_budgets: true}
`)
	ks := keys.NewMemory()
	budget := 10.0
	if err := ks.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret("sk-strict"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	h, holds := holdingHandler(cfg, ks, func() time.Time { return now })
	for _, tc := range []struct {
		name     string
		deadline time.Duration // 0: none, the router's timeout bounds the request
		want     time.Duration
	}{
		{"router timeout", 0, cfg.Router.Timeout},
		{"request deadline", 40 * time.Second, 40 * time.Second},
	} {
		*holds = nil
		ctx := context.Background()
		if tc.deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, now.Add(tc.deadline))
			defer cancel()
		}
		rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-strict",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`).WithContext(ctx))
		if rec.Code != http.StatusOK || len(*holds) != 1 || (*holds)[0] == nil {
			t.Fatalf("%s: status %d, holds %v: %s", tc.name, rec.Code, *holds, rec.Body)
		}
		if got, want := (*holds)[0].Expires, now.Add(tc.want+limits.HoldGrace); !got.Equal(want) {
			t.Errorf("%s: hold expires %v after admission, want %v (the request's bound + limits.HoldGrace)", tc.name, got.Sub(now), want.Sub(now))
		}
	}
}

// Hostile max_tokens and n: numbers whose product or sum wraps an int64.

const okChat = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`

// hostileHandler is a gateway over one priced deployment (with modelInfo)
// and a memory key store holding key sk-k with settings s.
func hostileHandler(t *testing.T, up string, modelInfo, general string, s keys.Settings) (*Handler, *[]*limits.Hold) {
	t.Helper()
	cfg := loadConfig(t, `model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: `+up+`, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
`+modelInfo+`general_settings: {master_key: sk-master`+general+`}
`)
	ks := keys.NewMemory()
	if err := ks.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret("sk-k"), Settings: s}); err != nil {
		t.Fatal(err)
	}
	return holdingHandler(cfg, ks, nil)
}

// holdingHandler is a gateway over cfg and ks that keeps every completed
// request's hold (OnComplete, never settled), its clock now (nil: the
// real one), with no wait between retries.
func holdingHandler(cfg *config.Config, ks KeyReader, now func() time.Time) (*Handler, *[]*limits.Hold) {
	quiet := gatewaytest.Quiet()
	holds := new([]*limits.Hold)
	return New(Options{
		Config: cfg, Router: router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: quiet, Sleep: noWait}),
		Provider: providers.New(providers.NewHTTPClient()), Keys: ks, Limits: limits.NewMemory(), Now: now, Logger: quiet,
		OnComplete: func(_ context.Context, c *Completion) { *holds = append(*holds, c.Hold) },
	}), holds
}

// A max_tokens times n that overflows an int64 reserves the saturated
// worst case, so a strict budget refuses it; it used to wrap to 0 (only the
// prompt reserved, the request served past the budget) or below 0 (a 500).
func TestStrictHostileMaxTokens(t *testing.T) {
	up := gatewaytest.Answering(t, http.StatusOK, "", okChat)
	budget := 0.05
	h, _ := hostileHandler(t, up.URL, "", ", strict_budgets: true", keys.Settings{Budget: keys.Budget{MaxBudget: &budget}})
	for _, body := range []string{
		`{"model":"m","max_tokens":4611686018427387904,"n":4,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":4611686018427387904,"n":2,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_completion_tokens":9223372036854775807,"n":128,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":1e300,"messages":[{"role":"user","content":"hi"}]}`,
	} {
		rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-k", body))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "budget_exceeded") {
			t.Errorf("%s: status %d, want 400 budget_exceeded: %s", body, rec.Code, rec.Body)
		}
	}
	if n := up.Calls.Load(); n != 0 {
		t.Errorf("the upstream was called %d times under a $0.05 budget", n)
	}
}

// A max_tokens above every deployment's output cap is clamped to it for
// the reservation: the request is served, its hold priced at the cap.
func TestStrictMaxTokensClampedToCap(t *testing.T) {
	up := gatewaytest.Answering(t, http.StatusOK, "", okChat)
	budget := 1.0
	h, holds := hostileHandler(t, up.URL, "    model_info: {max_output_tokens: 100}\n", ", strict_budgets: true", keys.Settings{Budget: keys.Budget{MaxBudget: &budget}})
	body := `{"model":"m","max_tokens":4611686018427387904,"n":4,"messages":[{"role":"user","content":"hi"}]}`
	rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-k", body))
	if rec.Code != http.StatusOK || len(*holds) != 1 || (*holds)[0] == nil {
		t.Fatalf("status %d, holds %v: %s", rec.Code, *holds, rec.Body)
	}
	want := limits.Price{Input: 1e-6, Output: 2e-6}.Reserve(int64(len(body)), 400)
	if got := (*holds)[0].Amount; got != want {
		t.Errorf("hold %d nano-USD, want %d (max_tokens clamped to 100, times n 4)", got, want)
	}
}

// A huge max_tokens at a key with an rpm or tpm limit is not a 500 (the
// token estimate wrapped negative): with only an rpm limit it is served;
// with a tpm limit it is refused as over it, unless the deployment's
// output cap brings the estimate within it.
func TestHugeMaxTokensAtLimitedKey(t *testing.T) {
	for _, tc := range []struct {
		name      string
		modelInfo string
		s         keys.Settings
		want      int
	}{
		{"rpm", "", keys.Settings{RPMLimit: 100}, http.StatusOK},
		{"tpm", "", keys.Settings{TPMLimit: 100000}, http.StatusTooManyRequests},
		{"tpm, capped deployment", "    model_info: {max_output_tokens: 100}\n", keys.Settings{TPMLimit: 100000}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := gatewaytest.Answering(t, http.StatusOK, "", okChat)
			h, _ := hostileHandler(t, up.URL, tc.modelInfo, "", tc.s)
			for _, body := range []string{
				`{"model":"m","max_tokens":9223372036854775807,"messages":[{"role":"user","content":"hi"}]}`,
				`{"model":"m","max_tokens":4611686018427387904,"n":4,"messages":[{"role":"user","content":"hi"}]}`,
			} {
				rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-k", body))
				if rec.Code != tc.want {
					t.Errorf("%s: status %d, want %d: %s", body, rec.Code, tc.want, rec.Body)
				}
			}
		})
	}
}

// n above 128 is refused with a 400 naming n, as OpenAI does.
func TestNAbove128(t *testing.T) {
	up := gatewaytest.Answering(t, http.StatusOK, "", okChat)
	h, _ := hostileHandler(t, up.URL, "", "", keys.Settings{})
	rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "sk-k",
		`{"model":"m","n":129,"messages":[{"role":"user","content":"hi"}]}`))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"param":"n"`) {
		t.Errorf("status %d, want 400 naming n: %s", rec.Code, rec.Body)
	}
	if up.Calls.Load() != 0 {
		t.Error("n 129 reached the upstream")
	}
}

// Under strict budgets a media call reserves its worst case at media
// prices (n images of the size asked; the characters of a speech input),
// so a budget below it refuses the call before the upstream is paid; a
// transcription, whose duration is unknown before the call, is refused.
func TestStrictMedia(t *testing.T) {
	up := gatewaytest.Answering(t, http.StatusOK, "application/json", `{"created":1,"data":[{"url":"u"}]}`)
	cfg := loadConfig(t, `model_list:
  - model_name: img
    litellm_params: {model: openai/dall-e-3, api_base: `+up.URL+`}
  - model_name: tts
    litellm_params: {model: openai/tts-1, api_base: `+up.URL+`}
  - model_name: stt
    litellm_params: {model: openai/whisper-1, api_base: `+up.URL+`}
general_settings: {master_key: sk-master, strict_budgets: true}
`)
	ks := keys.NewMemory()
	budget := 0.10
	if err := ks.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret("sk-k"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
		t.Fatal(err)
	}
	h, holds := holdingHandler(cfg, ks, nil)
	// One standard 1024x1024 dall-e-3 image (~$0.04) fits in $0.10; four do not.
	rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/images/generations", "sk-k", `{"model":"img","prompt":"a cat"}`))
	if rec.Code != 200 || len(*holds) != 1 || (*holds)[0] == nil || (*holds)[0].Amount != 39_999_924 {
		t.Fatalf("one image: %d %s, holds %v", rec.Code, rec.Body, (*holds))
	}
	calls := up.Calls.Load()
	rec = gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/images/generations", "sk-k", `{"model":"img","prompt":"a cat","n":4}`))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "budget_exceeded") || up.Calls.Load() != calls {
		t.Errorf("four images over the budget: %d %s", rec.Code, rec.Body)
	}
	rec = gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/audio/speech", "sk-k", `{"model":"tts","input":"`+strings.Repeat("x", 10000)+`","voice":"alloy"}`))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "budget_exceeded") { // 10000 characters: $0.15
		t.Errorf("speech over the budget: %d %s", rec.Code, rec.Body)
	}
	ct, body := multipartBody(t, []byte("audio"), "model", "stt")
	req := gatewaytest.Request(http.MethodPost, "/v1/audio/transcriptions", "sk-k", string(body))
	req.Header.Set("Content-Type", ct)
	rec = gatewaytest.Do(h, req)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "per second of audio") {
		t.Errorf("transcription under strict budgets: %d %s", rec.Code, rec.Body)
	}
}

const twoModels = "general_settings: {master_key: sk-master}\nmodel_list:\n  - model_name: a\n    litellm_params: {model: mock/a}\n  - model_name: b\n    litellm_params: {model: mock/b}\n"

// model_max_budget on a key: a model whose budget is spent in the current
// period is refused (LiteLLM's 400 budget_exceeded), from the key as read
// for authentication; another model of the same key passes, and so does
// the spent model in the next period.
func TestKeyModelMaxBudget(t *testing.T) {
	c := context.Background()
	ks := keys.NewMemory()
	k := keys.Key{Hash: keys.HashSecret("sk-mb"), Alias: "ci", Settings: keys.Settings{ModelMaxBudget: map[string]keys.ModelBudget{
		"a": {Limit: 1000, Period: "1d"},
		"b": {Limit: 1000, Period: "1d"},
	}}}
	if err := ks.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2031, 5, 6, 12, 0, 0, 0, time.UTC)
	ref := keys.Ref{Kind: keys.KindKey, ID: k.Hash}
	if _, err := ks.ApplySpend(c, []keys.SpendDelta{{Ref: ref, Nanos: 1000, At: at, Model: "a"}, {Ref: ref, Nanos: 999, At: at, Model: "b"}}); err != nil {
		t.Fatal(err)
	}
	now := at
	f := serve(t, testHandler(Options{Config: loadConfig(t, twoModels), Keys: ks, Limits: limits.NewMemory(), Now: func() time.Time { return now }}))
	chat := func(model string) (int, string) {
		resp := f.post(t, "/v1/chat/completions", "sk-mb", `{"model":"`+model+`","mock_response":"hi"}`)
		return resp.StatusCode, gatewaytest.ReadAll(t, resp.Body)
	}
	code, out := chat("a")
	if code != 400 {
		t.Fatalf("spent model: %d %s", code, out)
	}
	msg, typ, _ := openAIError(t, out)
	if typ != "budget_exceeded" || !strings.Contains(msg, "LiteLLM Virtual Key: "+k.Hash+", key_alias: ci, exceeded budget for model=a") {
		t.Errorf("refusal: %s", out)
	}
	if code, out := chat("b"); code != 200 {
		t.Errorf("the key's other model (under its budget): %d %s", code, out)
	}
	now = at.AddDate(0, 0, 1)
	if code, out := chat("a"); code != 200 {
		t.Errorf("the spent model in the next period: %d %s", code, out)
	}
}

// model_rpm_limit on a team bounds its keys' requests to that model, in
// the admission's one write; other models are not bounded by it.
func TestTeamModelRPMLimit(t *testing.T) {
	c := context.Background()
	ks := keys.NewMemory()
	if err := ks.Teams().Create(c, keys.Team{ID: "t1", Settings: keys.Settings{ModelRPM: map[string]int64{"a": 1}, ModelTPM: map[string]int64{"b": 1_000_000}}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"sk-t1", "sk-t2"} {
		if err := ks.CreateKey(c, keys.Key{Hash: keys.HashSecret(s), TeamID: "t1"}); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().UTC().Truncate(time.Minute).Add(30 * time.Second) // one window for every request
	f := serve(t, testHandler(Options{Config: loadConfig(t, twoModels), Keys: ks, Limits: limits.NewMemory(), Now: func() time.Time { return at }}))
	for i, tt := range []struct {
		key, model string
		status     int
	}{{"sk-t1", "a", 200}, {"sk-t2", "a", 429}, {"sk-t1", "b", 200}, {"sk-t2", "b", 200}} {
		resp := f.post(t, "/v1/chat/completions", tt.key, `{"model":"`+tt.model+`","mock_response":"hi"}`)
		out := gatewaytest.ReadAll(t, resp.Body)
		if resp.StatusCode != tt.status {
			t.Fatalf("request %d (%s to %s): %d %s", i, tt.key, tt.model, resp.StatusCode, out)
		}
		if tt.status == 429 {
			if msg, _, _ := openAIError(t, out); !strings.Contains(msg, "Hit limit for team: model_rpm_limit of 1 per minute for model a") {
				t.Errorf("refusal: %s", out)
			}
		}
	}
}

// With strict_budgets, a key's model_max_budget entry is reserved like its
// max_budget: a request whose worst-case cost does not fit in what the
// model has left (its spend as read plus the reservations in flight) is
// refused before the upstream call, while the key's other model passes.
func TestStrictModelMaxBudget(t *testing.T) {
	up := gatewaytest.Answering(t, http.StatusOK, "", `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
	cfg := loadConfig(t, `model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: `+up.URL+`, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
  - model_name: m2
    litellm_params: {model: openai/y, api_base: `+up.URL+`, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
general_settings: {master_key: sk-master, strict_budgets: true}
`)
	c := context.Background()
	ks := keys.NewMemory()
	now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	h, holds := holdingHandler(cfg, ks, func() time.Time { return now })
	body := func(model string) string {
		return `{"model":"` + model + `","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	}
	chat := func(key, model string) (int, string) {
		rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", key, body(model)))
		return rec.Code, rec.Body.String()
	}
	// A probe key measures one request's reservation.
	mb := func(limit int64) keys.Settings {
		return keys.Settings{ModelMaxBudget: map[string]keys.ModelBudget{"m": {Limit: limit, Period: "1d"}}}
	}
	if err := ks.CreateKey(c, keys.Key{Hash: keys.HashSecret("sk-probe"), Settings: mb(1 << 40)}); err != nil {
		t.Fatal(err)
	}
	if code, out := chat("sk-probe", "m"); code != 200 || len(*holds) != 1 || (*holds)[0] == nil {
		t.Fatalf("probe: %d, holds %v: %s", code, *holds, out)
	}
	reserve := (*holds)[0].Amount
	if len((*holds)[0].Budgets) != 1 || (*holds)[0].Budgets[0].Kind != KindKeyModelBudget {
		t.Fatalf("probe's hold counters = %+v, want the key's model budget alone", (*holds)[0].Budgets)
	}
	if err := ks.CreateKey(c, keys.Key{Hash: keys.HashSecret("sk-mb"), Settings: mb(reserve + reserve/2)}); err != nil {
		t.Fatal(err)
	}
	if code, out := chat("sk-mb", "m"); code != 200 {
		t.Fatalf("first request within the model budget: %d %s", code, out)
	}
	code, out := chat("sk-mb", "m")
	if msg, typ, _ := openAIError(t, out); code != 400 || typ != "budget_exceeded" || !strings.Contains(msg, "key's model m has spent or reserved") {
		t.Fatalf("second request, over what the model has left: %d %s", code, out)
	}
	if code, out := chat("sk-mb", "m2"); code != 200 {
		t.Fatalf("the key's other model: %d %s", code, out)
	}
}
