package app_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// strictFullEnv runs TestStrictBudgetUnderLoad at the size, 8
// clients x 64 concurrent goroutines; without it CI runs 2 x 8.
const strictFullEnv = "SLUICE_STRICT_FULL"

// The strict-budget guarantee through the real handlers: two gateway
// instances on one DynamoDB whose every answer comes 500 ms late, clients x
// goroutines concurrent callers at one key with a small max_budget, each
// making requests until three in a row are refused: most plain, some with
// hostile max_tokens and n (2^62 x 4, 1e300, n 4), some with a deadline
// shorter than the store's delay (their admissions commit, then time out:
// 503). Recorded spend never passes max_budget, no request is a 500, and
// once every request is answered and the spend queues are drained no hold
// is left and the budget's counter equals the recorded spend.
//
//	SLUICE_STRICT_FULL=1 go test -run TestStrictBudgetUnderLoad -v ./shared/app/
func TestStrictBudgetUnderLoad(t *testing.T) {
	clients, goroutines := 2, 8
	if os.Getenv(strictFullEnv) != "" {
		clients, goroutines = 8, 64
	}
	names := ddblocal.Tables(t)
	p := ddblocal.NewProxy(t, "")
	url := slowUpstream(t, 20*time.Millisecond)
	// Real cost 5 x $0.00001 + 1 x $0.001 = $0.00105; a plain request
	// reserves about (50 + 256) x $0.00001 + 1 x $0.001 = $0.0041.
	yaml := fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, input_cost_per_token: 0.00001, output_cost_per_token: 0.001}
router_settings: {num_retries: 0}
general_settings: {master_key: sk-master, strict_budgets: true}
`, url)
	// The key stays cached (read once, below): a short deadline is
	// the admission's, and the budget is the counter's alone to hold.
	s := app.Settings{StoreTimeout: 30 * time.Second, KeyCacheTTL: time.Hour}
	gws := []*app.Gateway{proxied(t, yaml, names, p, s), proxied(t, yaml, names, p, s)}
	budget := 0.05 // about 47 requests' real cost
	secret := "sk-strict-load"
	hash := keys.HashSecret(secret)
	ctx := context.Background()
	if err := gws[0].Keys.CreateKey(ctx, keys.Key{Hash: hash, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
		t.Fatal(err)
	}
	bodies := []string{
		`{"model":"m","max_tokens":4611686018427387904,"n":4,"messages":[]}`,
		`{"model":"m","max_tokens":1e300,"messages":[]}`,
		`{"model":"m","max_tokens":1,"n":4,"messages":[]}`,
		`{"model":"m","max_tokens":1,"messages":[]}`,
	}
	for _, gw := range gws { // a hostile request is refused, and caches the key
		if rec := call(t, gw.Handler, ctx, secret, bodies[0]); rec.Code != 400 {
			t.Fatalf("warm-up: %d %s", rec.Code, rec.Body)
		}
	}
	p.SetDelay(500 * time.Millisecond)
	codes := hammer(clients*goroutines, 0, 100*time.Millisecond, func(cg int) int {
		kind := cg % 8 // 0-2: bodies[kind]; 3: a short deadline; else plain
		rctx, cancel := context.WithCancel(ctx)
		if kind == 3 { // shorter than the admission's answer takes
			rctx, cancel = context.WithTimeout(ctx, 400*time.Millisecond)
		}
		defer cancel()
		return call(t, gws[(cg/goroutines)%2].Handler, rctx, secret, bodies[min(kind, 3)]).Code
	})
	p.SetDelay(0)
	for _, gw := range gws {
		gw.FlushSpend(ctx)
	}

	st := waitSettled(t, ctx, names, keys.KindKey, hash, func(ks *ddbkeys.Store) (float64, error) {
		k, err := ks.GetKey(ctx, hash)
		return k.Spend, err
	})
	open, committed, spent := st.open, st.committed, st.spent
	maxN := keys.Nanos(budget)
	t.Logf("%d x %d callers at 2 instances, store answers 500 ms late: statuses %v; spent $%s of $%s (%d requests' worth); counter $%s; %d holds open",
		clients, goroutines, codes, keys.DecimalUSD(spent), keys.DecimalUSD(maxN), spent/1_050_000, keys.DecimalUSD(committed), open)
	if spent > maxN {
		t.Errorf("recorded spend %d nano-USD exceeds max_budget %d", spent, maxN)
	}
	if !st.ok {
		t.Errorf("after every answer and the queues drained: %d holds open, counter %d, spend %d; want no hold and counter = spend", open, committed, spent)
	}
	if codes[500] > 0 || codes[200] == 0 {
		t.Errorf("statuses %v: want some served and no 500", codes)
	}
}
