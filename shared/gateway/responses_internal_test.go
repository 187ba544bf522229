package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
)

func TestWithItemIDs(t *testing.T) {
	in := `[{"type":"message","role":"user","content":"a"},{"id":"msg_keep","type":"message"},{ },7]`
	out := withItemIDs([]byte(in))
	r := gjson.ParseBytes(out)
	if !gjson.ValidBytes(out) || len(r.Array()) != 4 || !strings.HasPrefix(r.Get("0.id").Str, "msg_") || r.Get("0.content").Str != "a" ||
		r.Get("1.id").Str != "msg_keep" || !strings.HasPrefix(r.Get("2.id").Str, "msg_") || r.Get("3").Raw != "7" {
		t.Errorf("withItemIDs = %s", out)
	}
	if same := `[{"id":"a"}]`; string(withItemIDs([]byte(same))) != same {
		t.Error("a list with every id is not kept as it is")
	}
}

// TestResponsesStrictBudget: under strict_budgets a Responses request
// reserves its worst case with max_output_tokens as its output cap, and is
// refused when that does not fit in the key's budget.
func TestResponsesStrictBudget(t *testing.T) {
	cfg := loadConfig(t, `model_list:
  - model_name: m
    litellm_params: {model: mock/x, mock_response: "ok", input_cost_per_token: 0.000001, output_cost_per_token: 0.001}
general_settings: {master_key: sk-master, strict_budgets: true}
`)
	ks := keys.NewMemory()
	budget := 1.0 // $1: 1000 output tokens at most
	if err := ks.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret("sk-strict"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan *limits.Hold, 2) // OnComplete runs after the response is written
	f := serve(t, testHandler(Options{Config: cfg, Keys: ks, Limits: limits.NewMemory(),
		OnComplete: func(_ context.Context, c *Completion) { done <- c.Hold }}))
	resp := f.post(t, "/v1/responses", "sk-strict", `{"model":"m","input":"hi","max_output_tokens":100}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, gatewaytest.ReadAll(t, resp.Body))
	}
	gatewaytest.ReadAll(t, resp.Body)
	var hold *limits.Hold
	select {
	case hold = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never completed")
	}
	if hold == nil || hold.Amount < 100_000_000 || hold.Amount > 110_000_000 {
		t.Fatalf("hold %+v, want about $0.10 (100 output tokens at $0.001)", hold)
	}
	resp = f.post(t, "/v1/responses", "sk-strict", `{"model":"m","input":"hi","max_output_tokens":5000}`)
	body := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode == 200 || !strings.Contains(body, "Budget has been exceeded") {
		t.Errorf("a worst case above the budget: %d %s", resp.StatusCode, body)
	}
}
