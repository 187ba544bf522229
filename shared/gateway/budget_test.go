package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
)

// TestBudgets: each budget scope (key, team, user, team member, end user)
// blocks at its limit with a 400 budget_exceeded naming it, its spend and
// its limit; a budget_duration period ends exactly at its boundary.
func TestBudgets(t *testing.T) {
	cfg, err := config.Load([]byte(`model_list:
  - model_name: m
    litellm_params: {model: mock/m}
general_settings: {master_key: sk-master}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ks := keys.NewMemory()
	usd := func(v float64) *float64 { return &v }
	day1 := time.Date(2031, 5, 6, 23, 59, 59, 0, time.UTC)
	var mu sync.Mutex
	now := day1
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ks.CreateTeam(ctx, keys.Team{ID: "t-broke", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(2)}}}))
	must(ks.CreateTeam(ctx, keys.Team{ID: "t-ok"}))
	must(ks.CreateUser(ctx, keys.User{ID: "u-broke", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(3)}}}))
	must(ks.CreateUser(ctx, keys.User{ID: "u-ok"}))
	must(ks.AddMember(ctx, keys.Member{TeamID: "t-ok", UserID: "u-ok", Role: keys.MemberUser, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(0.5)}}}))
	must(ks.CreateEndUser(ctx, keys.EndUser{ID: "customer-broke", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(1)}}}))
	must(ks.CreateEndUser(ctx, keys.EndUser{ID: "customer-blocked", Settings: keys.Settings{Blocked: true}}))
	for _, k := range []keys.Key{
		{Hash: keys.HashSecret("sk-daily"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(1), Duration: "1d"}}},
		{Hash: keys.HashSecret("sk-team"), TeamID: "t-broke"},
		{Hash: keys.HashSecret("sk-user"), UserID: "u-broke"},
		{Hash: keys.HashSecret("sk-member"), TeamID: "t-ok", UserID: "u-ok"},
		{Hash: keys.HashSecret("sk-fine")},
	} {
		must(ks.CreateKey(ctx, k))
	}
	spend := func(kind keys.Kind, id string, v float64) keys.SpendDelta {
		return keys.SpendDelta{Ref: keys.Ref{Kind: kind, ID: id}, Nanos: keys.Nanos(v), At: day1}
	}
	_, err = ks.ApplySpend(ctx, []keys.SpendDelta{
		spend(keys.KindKey, keys.HashSecret("sk-daily"), 1),
		spend(keys.KindTeam, "t-broke", 2.5),
		spend(keys.KindUser, "u-broke", 3),
		spend(keys.KindMember, keys.MemberID("t-ok", "u-ok"), 0.5),
		spend(keys.KindEndUser, "customer-broke", 1.25),
	})
	must(err)

	rt := router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(New(Options{Config: cfg, Router: rt, Provider: providers.New(providers.NewHTTPClient()),
		Keys: ks, Limits: limits.NewMemory(), Now: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()
	f := &fixture{srv: srv}

	tests := []struct {
		name, key, user string
		status          int
		msg             []string // parts of the error message
	}{
		{"key budget", "sk-daily", "", 400, []string{"key has spent $1 of its max_budget of $1", "1d period", "2031-05-07T00:00:00Z"}},
		{"team budget", "sk-team", "", 400, []string{"team t-broke has spent $2.5 of its max_budget of $2"}},
		{"user budget", "sk-user", "", 400, []string{"user u-broke has spent $3 of its max_budget of $3"}},
		{"team member budget", "sk-member", "", 400, []string{"team member u-ok of team t-ok has spent $0.5 of its max_budget of $0.5"}},
		{"end user budget", "sk-fine", "customer-broke", 400, []string{"end user customer-broke has spent $1.25 of its max_budget of $1"}},
		{"blocked end user", "sk-fine", "customer-blocked", 403, []string{"end user customer-blocked is blocked"}},
		{"unregistered end user", "sk-fine", "someone-else", 200, nil},
		{"within every budget", "sk-fine", "", 200, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"model":"m","messages":[{"role":"user","content":"hi"}]`
			if tt.user != "" {
				body += `,"user":"` + tt.user + `"`
			}
			resp := f.post(t, "/v1/chat/completions", tt.key, body+"}")
			out := readAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, out)
			}
			if tt.status == 400 {
				if _, typ, code := openAIError(t, out); typ != "budget_exceeded" || code != "budget_exceeded" {
					t.Fatalf("type %s code %s, want budget_exceeded: %s", typ, code, out)
				}
			}
			for _, m := range tt.msg {
				if !strings.Contains(out, m) {
					t.Errorf("message lacks %q: %s", m, out)
				}
			}
		})
	}

	// One second later a new day starts, and the daily budget with it.
	mu.Lock()
	now = day1.Add(time.Second)
	mu.Unlock()
	resp := f.post(t, "/v1/chat/completions", "sk-daily", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if out := readAll(t, resp.Body); resp.StatusCode != 200 {
		t.Fatalf("after the daily boundary: status %d: %s", resp.StatusCode, out)
	}
	// The lifetime budget of the team does not reset.
	resp = f.post(t, "/v1/chat/completions", "sk-team", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if out := readAll(t, resp.Body); resp.StatusCode != 400 {
		t.Fatalf("team without budget_duration after a day: status %d, want 400: %s", resp.StatusCode, out)
	}
}
