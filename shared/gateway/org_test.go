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
			_, out := f.postWant(t, "/v1/chat/completions", tt.key, `{"model":"`+tt.model+`","messages":[{"role":"user","content":"hi"}]}`, tt.status)
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

// TestLinkedBudgets: an end user and a team membership that link a
// reusable budget are checked with the budget's max_budget and admitted
// with its rpm_limit and max_parallel_requests, in place of their own
// (spend stays theirs).
func TestLinkedBudgets(t *testing.T) {
	cfg := loadConfig(t, oneMockModel)
	ctx := context.Background()
	ks := keys.NewMemory()
	now := time.Date(2031, 5, 6, 12, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ks.Budgets().Create(ctx, keys.BudgetRecord{ID: "small", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: dollars(1)}}}))
	must(ks.Budgets().Create(ctx, keys.BudgetRecord{ID: "slow", Settings: keys.Settings{RPMLimit: 1}}))
	// Their own limits would admit everything: the budgets' apply.
	own := keys.Settings{RPMLimit: 1000, Budget: keys.Budget{MaxBudget: dollars(100)}}
	linked := func(id string) keys.Settings { s := own; s.BudgetID = id; return s }
	must(ks.EndUsers().Create(ctx, keys.EndUser{ID: "cust-broke", Settings: linked("small")}))
	must(ks.EndUsers().Create(ctx, keys.EndUser{ID: "cust-slow", Settings: linked("slow")}))
	must(ks.Teams().Create(ctx, keys.Team{ID: "t"}))
	must(ks.AddMember(ctx, keys.Member{Group: keys.KindTeam, GroupID: "t", UserID: "u", Role: keys.MemberUser, Settings: linked("small")}))
	must(ks.CreateKey(ctx, keys.Key{Hash: keys.HashSecret("sk-member"), TeamID: "t", UserID: "u"}))
	must(ks.CreateKey(ctx, keys.Key{Hash: keys.HashSecret("sk-fine")}))
	zero := int64(0)
	must(ks.Budgets().Create(ctx, keys.BudgetRecord{ID: "closed", Settings: keys.Settings{MaxParallel: &zero}}))
	must(ks.EndUsers().Create(ctx, keys.EndUser{ID: "cust-closed", Settings: linked("closed")}))
	must(ks.Teams().Create(ctx, keys.Team{ID: "t2"}))
	must(ks.AddMember(ctx, keys.Member{Group: keys.KindTeam, GroupID: "t2", UserID: "u2", Role: keys.MemberUser, Settings: linked("slow")}))
	must(ks.CreateKey(ctx, keys.Key{Hash: keys.HashSecret("sk-slow-member"), TeamID: "t2", UserID: "u2"}))
	_, err := ks.ApplySpend(ctx, []keys.SpendDelta{
		{Ref: keys.Ref{Kind: keys.KindEndUser, ID: "cust-broke"}, Nanos: keys.Nanos(1.5), At: now},
		{Ref: keys.Ref{Kind: keys.KindMember, ID: keys.MemberID("t", "u")}, Nanos: keys.Nanos(1.5), At: now},
	})
	must(err)
	f := serve(t, testHandler(Options{Config: cfg, Keys: ks, Limits: limits.NewMemory(), Now: func() time.Time { return now }}))

	for _, tt := range []struct {
		name, key, user string
		status          []int
		msg             string
	}{
		{"end user over its budget's max_budget", "sk-fine", "cust-broke", []int{400}, "End User=cust-broke over budget. Spend=1.5, Budget=1"},
		{"member over its budget's max_budget", "sk-member", "", []int{400}, "Team Member=u Team=t Current cost: 1.5, Max budget: 1"},
		{"end user at its budget's rpm_limit", "sk-fine", "cust-slow", []int{200, 429}, "end user: rpm limit of 1"},
		{"member at its budget's rpm_limit", "sk-slow-member", "", []int{200, 429}, "team member: rpm limit of 1"},
		{"end user whose budget admits no parallel request", "sk-fine", "cust-closed", []int{429}, "max_parallel_requests"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"model":"m","messages":[{"role":"user","content":"hi"}]`
			if tt.user != "" {
				body += `,"user":"` + tt.user + `"`
			}
			for i, want := range tt.status {
				resp := f.post(t, "/v1/chat/completions", tt.key, body+"}")
				out := gatewaytest.ReadAll(t, resp.Body)
				if resp.StatusCode != want {
					t.Fatalf("request %d: status %d, want %d: %s", i+1, resp.StatusCode, want, out)
				}
				if want != 200 && !strings.Contains(out, tt.msg) {
					t.Fatalf("request %d: body lacks %q: %s", i+1, tt.msg, out)
				}
			}
		})
	}
}

// TestEndUserRegion: an end user's allowed_model_region routes its
// requests only to deployments in that region (x-litellm-model-region
// names it), fallbacks included; with none, LiteLLM's 429 "No deployments
// available". Other end users and requests without one route as before.
func TestEndUserRegion(t *testing.T) {
	cfg := loadConfig(t, `model_list:
  - model_name: chat
    litellm_params: {model: mock/us, mock_response: hi, region_name: us}
    model_info: {id: chat-us}
  - model_name: chat
    litellm_params: {model: mock/eu, mock_response: hi, region_name: eu}
    model_info: {id: chat-eu}
  - model_name: us-only
    litellm_params: {model: mock/us, mock_response: hi, region_name: us}
    model_info: {id: us-only}
  - model_name: fb-us
    litellm_params: {model: mock/us, mock_response: hi, region_name: us}
    model_info: {id: fb-us}
  - model_name: with-fallback
    litellm_params: {model: mock/us, mock_response: hi, region_name: us}
    model_info: {id: wf-us}
router_settings:
  fallbacks: [{with-fallback: [fb-us, chat]}]
general_settings: {master_key: sk-master}
`)
	store, ctx := keys.NewMemory(), context.Background()
	for _, e := range []keys.EndUser{{ID: "eu-cust", AllowedModelRegion: "eu"}, {ID: "any-cust"}} {
		if err := store.EndUsers().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	f := serve(t, testHandler(Options{Config: cfg, Keys: store}))
	for _, tt := range []struct {
		user, model string
		status      int
		deployment  string
		region      string
	}{
		{"eu-cust", "chat", 200, "chat-eu", "eu"},
		{"eu-cust", "with-fallback", 200, "chat-eu", "eu"},
		{"eu-cust", "us-only", 429, "", ""},
		{"any-cust", "us-only", 200, "us-only", "us"},
		{"unregistered", "us-only", 200, "us-only", "us"},
	} {
		for range 5 { // the shuffle must never pick outside the region
			resp := f.post(t, "/v1/chat/completions", "sk-master", `{"model":"`+tt.model+`","user":"`+tt.user+`","messages":[{"role":"user","content":"hi"}]}`)
			body := gatewaytest.ReadAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("%s %s: status %d, want %d: %s", tt.user, tt.model, resp.StatusCode, tt.status, body)
			}
			if tt.status != 200 {
				if !strings.Contains(body, "No deployments available for selected model") {
					t.Fatalf("%s %s: body %s, want LiteLLM's no deployments available", tt.user, tt.model, body)
				}
				break
			}
			if got := resp.Header.Get("X-Litellm-Model-Id"); got != tt.deployment {
				t.Fatalf("%s %s: served by %q, want %q", tt.user, tt.model, got, tt.deployment)
			}
			if got := resp.Header.Get("X-Litellm-Model-Region"); got != tt.region {
				t.Fatalf("%s %s: x-litellm-model-region %q, want %q", tt.user, tt.model, got, tt.region)
			}
		}
	}
}

// oneMockModel is a config of one mock model, m, behind the master key
// sk-master.
const oneMockModel = `model_list:
  - model_name: m
    litellm_params: {model: mock/m}
general_settings: {master_key: sk-master}
`

// dollars is a budget of v USD.
func dollars(v float64) *float64 { return &v }
