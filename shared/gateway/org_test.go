package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/spend"
)

// TestOrganizationBounds: a key whose team belongs to an organization is
// bounded by it, in LiteLLM's words: its models (access groups included),
// its budget, blocked, its rpm and max_parallel_requests; the spend event
// names it (version 2).
func TestOrganizationBounds(t *testing.T) {
	cfg := loadConfig(t, `model_list:
  - model_name: beta-a
    litellm_params: {model: mock/a, mock_response: hi}
    model_info: {access_groups: [beta-models]}
  - model_name: other
    litellm_params: {model: mock/c, mock_response: hi}
general_settings: {master_key: sk-master}
`)
	ctx := context.Background()
	ks := keys.NewMemory()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	two, zero := 2.0, int64(0)
	for _, o := range []keys.Organization{
		{ID: "org-beta", Settings: keys.Settings{Models: []string{"beta-models"}}},
		{ID: "org-broke", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &two}}},
		{ID: "org-blocked", Settings: keys.Settings{Blocked: true}},
		{ID: "org-rpm", Settings: keys.Settings{RPMLimit: 1}},
		{ID: "org-none", Settings: keys.Settings{MaxParallel: &zero}},
	} {
		must(ks.Organizations().Create(ctx, o))
		team := "t-" + strings.TrimPrefix(o.ID, "org-")
		must(ks.Teams().Create(ctx, keys.Team{ID: team, OrganizationID: o.ID}))
		must(ks.CreateKey(ctx, keys.Key{Hash: keys.HashSecret("sk-" + strings.TrimPrefix(o.ID, "org-")), TeamID: team}))
	}
	_, err := ks.ApplySpend(ctx, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindOrg, ID: "org-broke"}, Nanos: keys.Nanos(2.5), At: time.Now()}})
	must(err)
	events := make(chan spend.Event, 64)
	f := serve(t, testHandler(Options{Config: cfg, Keys: ks, Limits: limits.NewMemory(), OnComplete: func(_ context.Context, c *Completion) {
		events <- c.SpendEvent()
	}}))

	for _, tt := range []struct {
		name, key, model string
		status           int
		msg              string
	}{
		{"model in the organization's access group", "sk-beta", "beta-a", 200, ""},
		{"model outside the organization's models", "sk-beta", "other", 403, "org not allowed to access model. This org can only access models=['beta-models']. Tried to access other"},
		{"organization over budget", "sk-broke", "other", 400, "Budget has been exceeded! Organization=org-broke Current cost: 2.5, Max budget: 2"},
		{"organization blocked", "sk-blocked", "other", 401, "organization org-blocked is blocked"},
		{"organization rpm, first", "sk-rpm", "other", 200, ""},
		{"organization rpm, second", "sk-rpm", "other", 429, "Hit limit for organization: rpm limit of 1"},
		{"organization max_parallel_requests 0", "sk-none", "other", 429, "Max parallel request limit reached. Hit limit for organization: max_parallel_requests of 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.post(t, "/v1/chat/completions", tt.key, `{"model":"`+tt.model+`","messages":[{"role":"user","content":"hi"}]}`)
			out := gatewaytest.ReadAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, out)
			}
			if !strings.Contains(out, tt.msg) {
				t.Fatalf("body %s, want %q", out, tt.msg)
			}
			if tt.status == 400 {
				if _, typ, _ := openAIError(t, out); typ != "budget_exceeded" {
					t.Fatalf("type %s, want budget_exceeded", typ)
				}
			}
			if tt.status != 200 {
				return
			}
			hash := keys.HashSecret(tt.key)
			for { // OnComplete runs once the answer is written
				select {
				case e := <-events:
					if e.KeyHash != hash {
						continue
					}
					if org := "org-" + strings.TrimPrefix(tt.key, "sk-"); e.OrganizationID != org || e.Version != spend.VersionOrg || e.Validate() != nil {
						t.Fatalf("spend event organization %q version %d (%v), want %q, version %d", e.OrganizationID, e.Version, e.Validate(), org, spend.VersionOrg)
					}
					return
				case <-time.After(10 * time.Second):
					t.Fatal("no spend event")
				}
			}
		})
	}
}
