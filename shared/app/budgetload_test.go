package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// Budgets held across gateway instances on one DynamoDB under load: an
// organization's, a key's model budget and a key's strict budget.

// cheapStrictYAML is model m on one deployment at url priced at $0.00001 an
// input token and $0.001 an output token (the mock upstream's 5 + 1 tokens
// cost $0.00105), with no retries and strict budgets.
func cheapStrictYAML(url string) string {
	return fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, input_cost_per_token: 0.00001, output_cost_per_token: 0.001}
router_settings: {num_retries: 0}
general_settings: {master_key: sk-master, strict_budgets: true}
`, url)
}

// The organization budget's guarantee through the real handlers: two
// gateway instances (each with its own spend consumer) on one DynamoDB,
// many goroutines across both spending under one organization through the
// keys of two of its teams, under strict budgets. The organization's
// recorded spend is exactly the sum of its spend logs, the sum of its
// teams' spend, and never past its max_budget; once the queues are drained
// no hold is left and its budget counter equals its spend.
func TestOrgBudgetAcrossInstances(t *testing.T) {
	names := ddblocal.Tables(t)
	url := slowUpstream(t, 5*time.Millisecond)
	// Real cost 5 x $0.00001 + 1 x $0.001 = $0.00105; a request reserves
	// about (50 + 1) x $0.00001 + 1 x $0.001.
	yaml := cheapStrictYAML(url)
	s := app.Settings{Tables: names, StoreTimeout: 30 * time.Second}
	gws := []*app.Gateway{instance(t, yaml, s), instance(t, yaml, s)}
	ctx := context.Background()
	budget := 0.02 // about 19 requests' real cost
	org := "org-load"
	if err := gws[0].Keys.Organizations().Create(ctx, keys.Organization{ID: org, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
		t.Fatal(err)
	}
	teams := []string{"team-a", "team-b"}
	secrets := []string{"sk-org-a", "sk-org-b"}
	for i, team := range teams {
		if err := gws[0].Keys.Teams().Create(ctx, keys.Team{ID: team, OrganizationID: org}); err != nil {
			t.Fatal(err)
		}
		if err := gws[0].Keys.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secrets[i]), TeamID: team}); err != nil {
			t.Fatal(err)
		}
	}
	const goroutines = 8 // per instance
	// Each caller stops after three refusals in a row, or after maxCalls
	// requests (about 17 times what the budget pays for in all): a
	// gateway that never charges the organization still ends, and fails.
	const maxCalls = 20
	codes := hammer(2*goroutines, maxCalls, 50*time.Millisecond, func(g int) int {
		return call(t, gws[g%2].Handler, ctx, secrets[(g/2)%2], `{"model":"m","max_tokens":1,"messages":[]}`).Code
	})
	flush(ctx, gws...)

	st := waitSettled(t, ctx, names, keys.KindOrg, org, func(ks *ddbkeys.Store) (float64, error) {
		o, err := ks.GetOrganization(ctx, org)
		return o.Spend, err
	})
	open, committed, orgSpend := st.open, st.committed, st.spent
	sp, _ := directStores(t, names)
	ks := ddbkeys.New(ddblocal.Client(t), names.Keys, ddbkeys.Options{Timeout: 30 * time.Second})
	var logSum, teamSum int64
	var nLogs int
	logs, err := sp.Logs(ctx, spend.LogQuery{OrgID: org, From: time.Now().Add(-time.Hour), Limit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		logSum += l.Nanos()
	}
	nLogs = len(logs)
	for _, team := range teams {
		tm, err := ks.GetTeam(ctx, team)
		if err != nil {
			t.Fatal(err)
		}
		teamSum += keys.Nanos(tm.Spend)
	}
	maxN := keys.Nanos(budget)
	t.Logf("2 instances x %d goroutines: statuses %v; organization spent $%s of $%s in %d logs; counter $%s; %d holds open",
		goroutines, codes, keys.DecimalUSD(orgSpend), keys.DecimalUSD(maxN), nLogs, keys.DecimalUSD(committed), open)
	if codes[200] == 0 || nLogs < codes[200] || logSum == 0 {
		t.Fatalf("statuses %v, %d logs of the organization adding up to %d: want requests served and logged under it", codes, nLogs, logSum)
	}
	if orgSpend != logSum || orgSpend != teamSum {
		t.Errorf("organization spend %d nano-USD; its logs add up to %d, its teams' spend to %d: want all equal", orgSpend, logSum, teamSum)
	}
	if orgSpend > maxN || logSum > maxN {
		t.Errorf("organization spend %d nano-USD (logs: %d) exceeds its max_budget %d", orgSpend, logSum, maxN)
	}
	if !st.ok {
		t.Errorf("after the queues drained: %d holds open, counter %d, spend %d; want no hold and counter = spend", open, committed, orgSpend)
	}
	if codes[500] > 0 {
		t.Errorf("statuses %v: want no 500", codes)
	}
}

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
	flush(ctx, gws...)
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
	yaml := cheapStrictYAML(url)
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
	flush(ctx, gws...)

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
