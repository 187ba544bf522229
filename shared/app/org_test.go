package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// A key whose team belongs to an organization reads the organization once
// (cold) and never again while cached: a warm request is its admission
// alone, the organization's rpm counted in the same write as the key's;
// a team with no organization reads none.
func TestDynamoDBCallsWithOrganization(t *testing.T) {
	up, hits := upstream(t, 200)
	gw := instance(t, oneModel(up.URL), app.Settings{Tables: ddblocal.Tables(t)})
	ctx := context.Background()
	budget := 10.0
	if err := gw.Keys.CreateOrganization(ctx, keys.Organization{ID: "org-calls", Settings: keys.Settings{RPMLimit: 100, Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
		t.Fatal(err)
	}
	for team, org := range map[string]string{"t-plain": "", "t-org": "org-calls"} {
		if err := gw.Keys.CreateTeam(ctx, keys.Team{ID: team, OrganizationID: org}); err != nil {
			t.Fatal(err)
		}
	}
	for secret, team := range map[string]string{"sk-plain": "t-plain", "sk-org": "t-org"} {
		if err := gw.Keys.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secret), TeamID: team}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []callCase{
		// No limit anywhere: key + team + cooldown reads, no admission.
		{"no organization, cold", "sk-plain", `{"model":"m"}`, 200, 3},
		{"no organization, warm", "sk-plain", `{"model":"m"}`, 200, 0},
		// Key + team + organization reads, then the admission (the
		// organization's rpm: the only limit).
		{"organization, cold", "sk-org", `{"model":"m"}`, 200, 4},
		{"organization, warm", "sk-org", `{"model":"m"}`, 200, 1},
		{"organization, warm again", "sk-org", `{"model":"m"}`, 200, 1},
	}
	for _, tt := range tests {
		countCalls(t, gw.Handler, ctx, tt)
	}
	if hits.Load() != 5 {
		t.Errorf("upstream hits = %d, want 5", hits.Load())
	}
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
	yaml := fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, input_cost_per_token: 0.00001, output_cost_per_token: 0.001}
router_settings: {num_retries: 0}
general_settings: {master_key: sk-master, strict_budgets: true}
`, url)
	s := app.Settings{Tables: names, StoreTimeout: 30 * time.Second}
	gws := []*app.Gateway{instance(t, yaml, s), instance(t, yaml, s)}
	ctx := context.Background()
	budget := 0.02 // about 19 requests' real cost
	org := "org-load"
	if err := gws[0].Keys.CreateOrganization(ctx, keys.Organization{ID: org, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
		t.Fatal(err)
	}
	teams := []string{"team-a", "team-b"}
	secrets := []string{"sk-org-a", "sk-org-b"}
	for i, team := range teams {
		if err := gws[0].Keys.CreateTeam(ctx, keys.Team{ID: team, OrganizationID: org}); err != nil {
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
	for _, gw := range gws {
		gw.FlushSpend(ctx)
	}

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
