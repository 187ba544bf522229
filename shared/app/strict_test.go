package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// strictYAML is one priced deployment ($0.001 a token both ways: the mock
// upstream's 5 + 1 tokens cost $0.006).
func strictYAML(url, extra string, strict bool) string {
	return fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, input_cost_per_token: 0.001, output_cost_per_token: 0.001%s}
general_settings: {master_key: sk-master, strict_budgets: %v}
`, url, extra, strict)
}

// With strict budgets a budgeted request costs one DynamoDB round trip
// before the upstream call (the hold rides in the admission's
// TransactWriteItems, or is one on its own), and a request no budget
// applies to costs nothing extra.
func TestStrictBudgetCallsPerRequest(t *testing.T) {
	up, _ := upstream(t, 200)
	gw := instance(t, strictYAML(up.URL, ", rpm: 1000", true), app.Settings{Tables: ddblocal.Tables(t)})
	defer gw.Close(context.Background())
	ctx := context.Background()
	budget := 10.0
	mk := func(secret string, k keys.Key) {
		k.Hash = keys.HashSecret(secret)
		if err := gw.Keys.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	mk("sk-budget-rpm", keys.Key{Settings: keys.Settings{RPMLimit: 100, Budget: keys.Budget{MaxBudget: &budget}}})
	mk("sk-budget", keys.Key{Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget, Duration: "1d"}}})
	mk("sk-plain", keys.Key{Settings: keys.Settings{RPMLimit: 100}})
	body := `{"model":"m","max_tokens":10,"messages":[]}`
	tests := []callCase{
		{"budget and rpm: the hold in the admission", "sk-budget-rpm", body, 200, 1},
		{"budget only: the hold alone", "sk-budget", body, 200, 1},
		{"no budget: the admission as before", "sk-plain", body, 200, 1},
		{"master key: no budget", "sk-master", body, 200, 1},
		{"no max_tokens and no known output limit", "sk-budget", `{"model":"m","messages":[]}`, 400, 0},
	}
	for _, tt := range tests {
		// Warm the caches right before the counted request, not once for
		// all: the key and cooldown caches live one second, which a loaded
		// machine can pass between a warm-up and a later case.
		call(t, gw.Handler, ctx, tt.key, tt.body)
		rec := countCalls(t, gw.Handler, ctx, tt)
		if tt.status == 400 && !strings.Contains(rec.Body.String(), "max_tokens") {
			t.Errorf("%s: %s, want a message asking for max_tokens", tt.name, rec.Body)
		}
	}
	// The spend events settle the holds: the counter equals the spend.
	gw.FlushSpend(ctx)
	time.Sleep(1100 * time.Millisecond) // past the key cache TTL
	k, err := gw.Keys.GetKey(ctx, keys.HashSecret("sk-budget-rpm"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := gw.Limits.(*ddblimits.Store).Committed(ctx, limits.BudgetCounterName("key", k.Hash, time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	if spent := keys.Nanos(k.Spend); c != spent || spent != 2*6_000_000 {
		t.Errorf("counter %d, spend %d: want both 12000000 (two requests at $0.006)", c, spent)
	}
}

// burst fires n concurrent requests at secret and returns how many were
// served.
func burst(t *testing.T, h http.Handler, secret string, n int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := call(t, h, context.Background(), secret, `{"model":"m","max_tokens":1,"messages":[]}`)
			if rec.Code == 200 {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ok
}

// slowUpstream answers like upstream after d.
func slowUpstream(t *testing.T, d time.Duration) string {
	srv := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(d)
		io.WriteString(w, okBody)
	})
	return srv.URL
}

// TestBudgetOvershoot measures what a burst spends past a small budget
// through the real gateway and spend queue: without strict budgets
// (asynchronous spend: every request admitted before the first costs land
// passes), and with them (never past the budget). The figures are in the
// README.
func TestBudgetOvershoot(t *testing.T) {
	const n = 200
	const cost = 6_000_000 // nano-USD a request
	for _, tc := range []struct {
		name   string
		store  string
		strict bool
		budget float64
	}{
		{"memory", app.StoreMemory, false, 0.06},
		{"dynamodb", app.StoreDynamoDB, false, 0.06},
		{"memory strict", app.StoreMemory, true, 1},
		{"dynamodb strict", app.StoreDynamoDB, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := slowUpstream(t, 20*time.Millisecond)
			s := app.Settings{ConfigYAML: []byte(strictYAML(url, "", tc.strict)), Logger: gatewaytest.Quiet()}
			var gw *app.Gateway
			if tc.store == app.StoreDynamoDB {
				gw = instance(t, string(s.ConfigYAML), app.Settings{Tables: ddblocal.Tables(t)})
			} else {
				var err error
				if gw, err = app.Build(context.Background(), s); err != nil {
					t.Fatal(err)
				}
			}
			defer gw.Close(context.Background())
			budget := tc.budget
			secret := "sk-burst"
			if err := gw.Keys.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret(secret), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
				t.Fatal(err)
			}
			served := 0
			for round := 0; round < 3; round++ { // bursts, until the budget holds
				served += burst(t, gw.Handler, secret, n)
				gw.FlushSpend(context.Background())
				time.Sleep(1100 * time.Millisecond) // past the key cache TTL
			}
			k, err := gw.Keys.GetKey(context.Background(), keys.HashSecret(secret))
			if err != nil {
				t.Fatal(err)
			}
			spent, maxN := keys.Nanos(k.Spend), keys.Nanos(budget)
			t.Logf("%s: %d requests served of 3 bursts of %d; budget $%s (%d requests' worth); spent $%s (%.1fx the budget, %d requests past it)",
				tc.name, served, n, keys.DecimalUSD(maxN), maxN/cost, keys.DecimalUSD(spent), float64(spent)/float64(maxN), max(0, (spent-maxN+cost-1)/cost))
			if tc.strict && spent > maxN {
				t.Errorf("strict budgets: spent %d > max_budget %d", spent, maxN)
			}
			if !tc.strict && spent <= maxN {
				t.Logf("no overshoot measured (the burst did not outrun the spend pipeline)")
			}
		})
	}
}
