package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// The DynamoDB calls a request costs, cold and warm, for each kind of
// principal and limit (countCalls).

// callsGateway builds one gateway instance on fresh tables and stores in
// it the records that recs creates (t fails on an error).
func callsGateway(t *testing.T, yaml string, recs func(ctx context.Context, ks app.KeyStore) error) (*app.Gateway, context.Context) {
	t.Helper()
	gw := instance(t, yaml, app.Settings{Tables: ddblocal.Tables(t)})
	ctx := context.Background()
	must(t, recs(ctx, gw.Keys))
	return gw, ctx
}

// runCalls serves tests in order (countCalls) and then checks that the
// upstream was called wantHits times in all (-1: not checked).
func runCalls(t *testing.T, gw *app.Gateway, ctx context.Context, tests []callCase, hits *atomic.Int64, wantHits int64) {
	t.Helper()
	for _, tt := range tests {
		countCalls(t, gw.Handler, ctx, tt)
	}
	if wantHits >= 0 && hits.Load() != wantHits {
		t.Errorf("upstream hits = %d, want %d", hits.Load(), wantHits)
	}
}

// createKeys stores a key of each secret with its settings and team.
func createKeys(ctx context.Context, ks app.KeyStore, secrets map[string]keys.Key) error {
	for secret, k := range secrets {
		k.Hash = keys.HashSecret(secret)
		if err := ks.CreateKey(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// The common request (warm caches, a virtual key with limits, a deployment
// with limits) makes exactly one DynamoDB call before the upstream call,
// plus the TPM correction after it.
func TestDynamoDBCallsPerRequest(t *testing.T) {
	up, hits := upstream(t, 200)
	yaml := fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, rpm: 1000}
general_settings: {master_key: sk-master}
`, up.URL)
	budget := 10.0
	secret := "sk-virtual-test-key"
	gw, ctx := callsGateway(t, yaml, func(ctx context.Context, ks app.KeyStore) error {
		return createKeys(ctx, ks, map[string]keys.Key{secret: {Alias: "t", Settings: keys.Settings{RPMLimit: 100, Budget: keys.Budget{MaxBudget: &budget}}}})
	})
	runCalls(t, gw, ctx, []callCase{
		// Cold: key read + cooldown read + admission.
		{"cold", secret, `{"model":"m","messages":[]}`, 200, 3},
		// Warm: the admission alone (rpm limits only: no TPM correction).
		{"warm", secret, `{"model":"m","messages":[]}`, 200, 1},
		{"warm again", secret, `{"model":"m","messages":[]}`, 200, 1},
		// The master key has no guards; the deployment's rpm is still counted.
		{"master key", "sk-master", `{"model":"m","messages":[]}`, 200, 1},
		// A wrong key is refused from the cache of negative answers after one read.
		{"wrong key", "sk-nope", `{"model":"m"}`, 401, 1},
		{"wrong key again", "sk-nope", `{"model":"m"}`, 401, 0},
	}, hits, 4)
}

// TestLinkedBudgetCallsPerRequest: a request whose end user links a
// reusable budget reads the budget once, cold, then from the key cache:
// warm, it costs the admission alone, as any limited request does.
func TestLinkedBudgetCallsPerRequest(t *testing.T) {
	up, hits := upstream(t, 200)
	secret := "sk-linked-test-key"
	gw, ctx := callsGateway(t, oneModel(up.URL), func(ctx context.Context, ks app.KeyStore) error {
		if err := createKeys(ctx, ks, map[string]keys.Key{secret: {}}); err != nil {
			return err
		}
		if err := ks.Budgets().Create(ctx, keys.BudgetRecord{ID: "b", Settings: keys.Settings{RPMLimit: 100}}); err != nil {
			return err
		}
		return ks.EndUsers().Create(ctx, keys.EndUser{ID: "cust", Settings: keys.Settings{BudgetID: "b"}})
	})
	body := `{"model":"m","user":"cust","messages":[]}`
	runCalls(t, gw, ctx, []callCase{
		// Cold: key, end user count, end user, its budget, cooldown, admission.
		{"cold", secret, body, 200, 6},
		// Warm: the admission of the budget's rpm_limit alone.
		{"warm", secret, body, 200, 1},
	}, hits, -1)
}

// max_parallel_requests costs no extra call at admission (its lease is in
// the admission's write) and one write per leased scope after the
// response; with none configured, nothing (TestDynamoDBCallsPerRequest).
func TestDynamoDBCallsWithMaxParallel(t *testing.T) {
	up, hits := upstream(t, 200)
	yaml := fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s}
  - model_name: limited
    litellm_params: {model: openai/y, api_base: %s, rpm: 1000, max_parallel_requests: 10}
general_settings: {master_key: sk-master}
`, up.URL, up.URL)
	four, zero := int64(4), int64(0)
	gw, ctx := callsGateway(t, yaml, func(ctx context.Context, ks app.KeyStore) error {
		return createKeys(ctx, ks, map[string]keys.Key{
			"sk-parallel-only": {Settings: keys.Settings{MaxParallel: &four}},
			"sk-parallel-rpm":  {Settings: keys.Settings{MaxParallel: &four, RPMLimit: 100}},
			"sk-parallel-zero": {Settings: keys.Settings{MaxParallel: &zero}},
		})
	})
	runCalls(t, gw, ctx, []callCase{
		// Cold: key read + cooldown read + admission (the lease) + release.
		{"cold", "sk-parallel-only", `{"model":"m"}`, 200, 4},
		// Warm: the admission's UpdateItem, and one release write.
		{"warm, key lease only", "sk-parallel-only", `{"model":"m"}`, 200, 2},
	}, hits, -1)
	call(t, gw.Handler, ctx, "sk-parallel-rpm", `{"model":"limited"}`) // warm this key's cache and the model's cooldowns
	runCalls(t, gw, ctx, []callCase{
		// Key rpm and lease, deployment rpm and lease: still one admission
		// (a transaction), then one release write per leased scope (2).
		{"warm, key and deployment leases", "sk-parallel-rpm", `{"model":"limited"}`, 200, 3},
		// 0 admits none, with no call at all once the key is cached.
		{"zero, cold", "sk-parallel-zero", `{"model":"m"}`, 429, 1},
		{"zero, warm", "sk-parallel-zero", `{"model":"m"}`, 429, 0},
	}, hits, 4)
}

// A key whose team belongs to an organization reads the organization once
// (cold) and never again while cached: a warm request is its admission
// alone, the organization's rpm counted in the same write as the key's;
// a team with no organization reads none.
func TestDynamoDBCallsWithOrganization(t *testing.T) {
	up, hits := upstream(t, 200)
	budget := 10.0
	gw, ctx := callsGateway(t, oneModel(up.URL), func(ctx context.Context, ks app.KeyStore) error {
		if err := ks.Organizations().Create(ctx, keys.Organization{ID: "org-calls", Settings: keys.Settings{RPMLimit: 100, Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
			return err
		}
		for team, org := range map[string]string{"t-plain": "", "t-org": "org-calls"} {
			if err := ks.Teams().Create(ctx, keys.Team{ID: team, OrganizationID: org}); err != nil {
				return err
			}
		}
		return createKeys(ctx, ks, map[string]keys.Key{"sk-plain": {TeamID: "t-plain"}, "sk-org": {TeamID: "t-org"}})
	})
	runCalls(t, gw, ctx, []callCase{
		// No limit anywhere: key + team + cooldown reads, no admission.
		{"no organization, cold", "sk-plain", `{"model":"m"}`, 200, 3},
		{"no organization, warm", "sk-plain", `{"model":"m"}`, 200, 0},
		// Key + team + organization reads, then the admission (the
		// organization's rpm: the only limit).
		{"organization, cold", "sk-org", `{"model":"m"}`, 200, 4},
		{"organization, warm", "sk-org", `{"model":"m"}`, 200, 1},
		{"organization, warm again", "sk-org", `{"model":"m"}`, 200, 1},
	}, hits, 5)
}

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
	must(t, createKeys(ctx, gw.Keys, map[string]keys.Key{
		"sk-budget-rpm": {Settings: keys.Settings{RPMLimit: 100, Budget: keys.Budget{MaxBudget: &budget}}},
		"sk-budget":     {Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget, Duration: "1d"}}},
		"sk-plain":      {Settings: keys.Settings{RPMLimit: 100}},
	}))
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
