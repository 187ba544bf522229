package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
)

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
	var holds []*limits.Hold
	quiet := gatewaytest.Quiet()
	h := New(Options{
		Config: cfg, Router: router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: quiet}),
		Provider: providers.New(providers.NewHTTPClient()), Keys: ks, Limits: limits.NewMemory(),
		Now: func() time.Time { return now }, Logger: quiet,
		OnComplete: func(_ context.Context, c *Completion) { holds = append(holds, c.Hold) }, // never settled: held
	})
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
	if code, out := chat("sk-probe", "m"); code != 200 || len(holds) != 1 || holds[0] == nil {
		t.Fatalf("probe: %d, holds %v: %s", code, holds, out)
	}
	reserve := holds[0].Amount
	if len(holds[0].Budgets) != 1 || holds[0].Budgets[0].Kind != KindKeyModelBudget {
		t.Fatalf("probe's hold counters = %+v, want the key's model budget alone", holds[0].Budgets)
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
