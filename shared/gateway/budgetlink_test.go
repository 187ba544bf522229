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

// TestLinkedBudgets: an end user and a team membership that link a
// reusable budget are checked with the budget's max_budget and admitted
// with its rpm_limit and max_parallel_requests, in place of their own
// (spend stays theirs).
func TestLinkedBudgets(t *testing.T) {
	cfg := loadConfig(t, `model_list:
  - model_name: m
    litellm_params: {model: mock/m}
general_settings: {master_key: sk-master}
`)
	ctx := context.Background()
	ks := keys.NewMemory()
	usd := func(v float64) *float64 { return &v }
	now := time.Date(2031, 5, 6, 12, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ks.Budgets().Create(ctx, keys.BudgetRecord{ID: "small", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(1)}}}))
	must(ks.Budgets().Create(ctx, keys.BudgetRecord{ID: "slow", Settings: keys.Settings{RPMLimit: 1}}))
	// Their own limits would admit everything: the budgets' apply.
	own := keys.Settings{RPMLimit: 1000, Budget: keys.Budget{MaxBudget: usd(100)}}
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
