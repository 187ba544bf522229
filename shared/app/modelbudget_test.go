package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// model_max_budget across instances: many goroutines on two gateway
// instances (each with its own caches and spend consumer) on DynamoDB Local
// spend on one key's model; the key's recorded spend on that model is
// exactly the sum of the requests' costs. Once it reaches the budget, the
// model is refused (LiteLLM's 400 budget_exceeded) on both instances, and
// the key's other model still passes.
func TestModelMaxBudgetAcrossInstances(t *testing.T) {
	names := ddblocal.Tables(t)
	up, _ := upstream(t, 200)
	yaml := fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %[1]s, input_cost_per_token: 0.001, output_cost_per_token: 0.001}
  - model_name: m2
    litellm_params: {model: openai/y, api_base: %[1]s, input_cost_per_token: 0.001, output_cost_per_token: 0.001}
general_settings: {master_key: sk-master}
`, up.URL)
	const instances, workers, each, cost = 2, 6, 4, 6_000_000 // $0.006 a request (5 + 1 tokens)
	const total = instances * workers * each * cost
	ctx := context.Background()
	var gws []*app.Gateway
	for range instances {
		gw := instance(t, yaml, app.Settings{Tables: names, KeyCacheTTL: 50 * time.Millisecond})
		t.Cleanup(func() { gw.Close(ctx) })
		gws = append(gws, gw)
	}
	secret := "sk-model-budget"
	hash := keys.HashSecret(secret)
	if err := gws[0].Keys.CreateKey(ctx, keys.Key{Hash: hash, Settings: keys.Settings{
		ModelMaxBudget: map[string]keys.ModelBudget{"m": {Limit: total}, "m2": {Limit: 1 << 40, Period: "30d"}},
	}}); err != nil {
		t.Fatal(err)
	}
	body := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
	}
	var wg sync.WaitGroup
	for _, gw := range gws {
		for range workers {
			wg.Go(func() {
				for range each {
					if rec := call(t, gw.Handler, ctx, secret, body("m")); rec.Code != 200 {
						t.Errorf("under the model budget: %d %s", rec.Code, rec.Body)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for _, gw := range gws {
		gw.FlushSpend(ctx)
	}
	direct := ddbkeys.New(ddblocal.Client(t), names.Keys, ddbkeys.Options{})
	var k keys.Key
	if !waitFor(func() bool {
		var err error
		k, err = direct.GetKey(ctx, hash)
		return err == nil && keys.Nanos(k.Spend) >= total
	}) {
		t.Fatalf("spend not recorded: key spend %v", k.Spend)
	}
	if got := k.ModelSpend["m"].Spend; got != total || keys.Nanos(k.Spend) != total {
		t.Fatalf("recorded model spend %d (key spend %v), want exactly %d", got, k.Spend, total)
	}
	if _, ok := k.ModelSpend["m2"]; ok {
		t.Errorf("model spend on a model not called: %v", k.ModelSpend)
	}
	time.Sleep(60 * time.Millisecond) // the key caches' TTL
	for i, gw := range gws {
		rec := call(t, gw.Handler, ctx, secret, body("m"))
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), "budget_exceeded") || !strings.Contains(rec.Body.String(), "exceeded budget for model=m") {
			t.Errorf("instance %d, spent model: %d %s", i, rec.Code, rec.Body)
		}
		if rec := call(t, gw.Handler, ctx, secret, body("m2")); rec.Code != 200 {
			t.Errorf("instance %d, the key's other model: %d %s", i, rec.Code, rec.Body)
		}
	}
}
