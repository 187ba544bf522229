package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
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
	if err := ks.CreateTeam(c, keys.Team{ID: "t1", Settings: keys.Settings{ModelRPM: map[string]int64{"a": 1}, ModelTPM: map[string]int64{"b": 1_000_000}}}); err != nil {
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
