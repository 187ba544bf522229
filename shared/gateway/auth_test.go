package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
)

func TestVirtualKeys(t *testing.T) {
	cfg, err := config.Load([]byte(`model_list:
  - model_name: a
    litellm_params: {model: mock/a}
  - model_name: b
    litellm_params: {model: mock/b}
router_settings: {model_group_alias: {alias-a: a}}
general_settings: {master_key: sk-master}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ks := keys.NewMemory()
	ctx := context.Background()
	spent, budget := 5.0, 5.0
	for _, k := range []keys.Key{
		{Hash: keys.HashSecret("sk-only-a"), Settings: keys.Settings{Models: []string{"a"}, RPMLimit: 2}},
		{Hash: keys.HashSecret("sk-blocked"), Settings: keys.Settings{Blocked: true}},
		{Hash: keys.HashSecret("sk-expired"), ExpiresAt: time.Now().Add(-time.Hour)},
		{Hash: keys.HashSecret("sk-broke"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}},
		{Hash: keys.HashSecret("sk-team"), TeamID: "t1"},
	} {
		if err := ks.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ks.ApplySpend(ctx, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindKey, ID: keys.HashSecret("sk-broke")}, Nanos: keys.Nanos(spent), At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if err := ks.Teams().Create(ctx, keys.Team{ID: "t1", Settings: keys.Settings{Models: []string{"b"}}}); err != nil {
		t.Fatal(err)
	}
	f := serve(t, testHandler(Options{Config: cfg, Keys: ks, Limits: limits.NewMemory()}))

	tests := []struct {
		name, key, model string
		status           int
		code             string
		msg              string // LiteLLM's words the message starts with (issue 20)
	}{
		{"allowed model", "sk-only-a", "a", 200, "", ""},
		{"allowed through its alias", "sk-only-a", "alias-a", 200, "", ""},
		{"model not allowed", "sk-only-a", "b", 403, "model_not_allowed", "key not allowed to access model. This key can only access models=['a']. Tried to access b"},
		{"over the key's rpm", "sk-only-a", "a", 429, "rate_limit_exceeded", "Max parallel request limit reached. Hit limit for key: rpm"},
		{"unknown key", "sk-nobody", "a", 401, "invalid_api_key", "Authentication Error, Invalid proxy server token passed."},
		{"blocked key", "sk-blocked", "a", 401, "invalid_api_key", "Authentication Error, Key is blocked."},
		{"expired key", "sk-expired", "a", 401, "invalid_api_key", "Authentication Error - Expired Key. Key Expiry time "},
		{"budget spent", "sk-broke", "a", 400, "budget_exceeded", "Budget has been exceeded! Key="},
		{"team's models", "sk-team", "b", 200, "", ""},
		{"outside the team's models", "sk-team", "a", 403, "model_not_allowed", "team not allowed to access model. This team can only access models=['b']. Tried to access a"},
		{"master key", "sk-master", "b", 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, out := f.postWant(t, "/v1/chat/completions", tt.key, `{"model":"`+tt.model+`"}`, tt.status)
			if tt.code != "" {
				if msg, _, code := openAIError(t, out); code != tt.code || !strings.HasPrefix(msg, tt.msg) {
					t.Fatalf("code %s, message %q; want %s, a message starting %q", code, msg, tt.code, tt.msg)
				}
			}
			if tt.status == 429 && resp.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		})
	}

	resp := f.send(t, http.MethodGet, "/v1/models", nil, "Authorization", "Bearer sk-only-a")
	body := gatewaytest.ReadAll(t, resp.Body)
	resp.Body.Close()
	if !strings.Contains(body, `"id":"a"`) || !strings.Contains(body, `"id":"alias-a"`) || strings.Contains(body, `"id":"b"`) {
		t.Fatalf("models for a key limited to a: %s", body)
	}
}

// TestBudgets: each budget scope (key, team, user, team member, end user)
// blocks at its limit with a 400 budget_exceeded naming it, its spend and
// its limit; a budget_duration period ends exactly at its boundary.
func TestBudgets(t *testing.T) {
	cfg := loadConfig(t, oneMockModel)
	ctx := context.Background()
	ks := keys.NewMemory()
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
	must(ks.Teams().Create(ctx, keys.Team{ID: "t-broke", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: dollars(2)}}}))
	must(ks.Teams().Create(ctx, keys.Team{ID: "t-ok"}))
	must(ks.Users().Create(ctx, keys.User{ID: "u-broke", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: dollars(3)}}}))
	must(ks.Users().Create(ctx, keys.User{ID: "u-ok"}))
	must(ks.AddMember(ctx, keys.Member{Group: keys.KindTeam, GroupID: "t-ok", UserID: "u-ok", Role: keys.MemberUser, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: dollars(0.5)}}}))
	must(ks.EndUsers().Create(ctx, keys.EndUser{ID: "customer-broke", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: dollars(1)}}}))
	must(ks.EndUsers().Create(ctx, keys.EndUser{ID: "customer-blocked", Settings: keys.Settings{Blocked: true}}))
	for _, k := range []keys.Key{
		{Hash: keys.HashSecret("sk-daily"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: dollars(1), Duration: "1d"}}},
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
	_, err := ks.ApplySpend(ctx, []keys.SpendDelta{
		spend(keys.KindKey, keys.HashSecret("sk-daily"), 1),
		spend(keys.KindTeam, "t-broke", 2.5),
		spend(keys.KindUser, "u-broke", 3),
		spend(keys.KindMember, keys.MemberID("t-ok", "u-ok"), 0.5),
		spend(keys.KindEndUser, "customer-broke", 1.25),
	})
	must(err)

	f := serve(t, testHandler(Options{Config: cfg, Keys: ks, Limits: limits.NewMemory(), Now: clock}))

	tests := []struct {
		name, key, user string
		status          int
		msg             []string // parts of the error message
	}{
		{"key budget", "sk-daily", "", 400, []string{"Budget has been exceeded! Key=", "Current cost: 1, Max budget: 1", "budget_duration 1d", "2031-05-07T00:00:00Z"}},
		{"team budget", "sk-team", "", 400, []string{"Budget has been exceeded! Team=t-broke Current cost: 2.5, Max budget: 2"}},
		{"user budget", "sk-user", "", 400, []string{"ExceededBudget: User=u-broke over budget. Spend=3, Budget=3"}},
		{"team member budget", "sk-member", "", 400, []string{"Budget has been exceeded! Team Member=u-ok Team=t-ok Current cost: 0.5, Max budget: 0.5"}},
		{"end user budget", "sk-fine", "customer-broke", 400, []string{"ExceededBudget: End User=customer-broke over budget. Spend=1.25, Budget=1"}},
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
			_, out := f.postWant(t, "/v1/chat/completions", tt.key, body+"}", tt.status)
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
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 200 {
		t.Fatalf("after the daily boundary: status %d: %s", resp.StatusCode, out)
	}
	// The lifetime budget of the team does not reset.
	resp = f.post(t, "/v1/chat/completions", "sk-team", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 400 {
		t.Fatalf("team without budget_duration after a day: status %d, want 400: %s", resp.StatusCode, out)
	}
}

// TestFallbacksAccess: per-request fallbacks name models the key must be
// allowed, as in LiteLLM; a key allowed only "limited" cannot reach "ok"
// through them. The refusal comes before any upstream call.
func TestFallbacksAccess(t *testing.T) {
	limited, ok := downAndUp(t)
	f := keyedFixture(t, fmt.Sprintf(`model_list:
  - model_name: limited
    litellm_params: {model: openai/gpt-4o-mini, api_base: %q, api_key: sk-up}
  - model_name: ok
    litellm_params: {model: openai/gpt-4o, api_base: %q, api_key: sk-up}
router_settings: {model_group_alias: {alias-ok: ok}}
general_settings: {master_key: sk-master}
`, limited.URL+"/v1", ok.URL+"/v1"),
		keys.Key{Hash: keys.HashSecret("sk-limited"), Settings: keys.Settings{Models: []string{"limited"}}},
		keys.Key{Hash: keys.HashSecret("sk-both"), Settings: keys.Settings{Models: []string{"limited", "ok"}}})
	for _, tt := range []struct {
		name, key, fallbacks string
		status               int
	}{
		{"string", "sk-limited", `["ok"]`, 403},
		{"object", "sk-limited", `[{"model":"ok"}]`, 403},
		{"alias", "sk-limited", `["alias-ok"]`, 403},
		{"after an allowed one", "sk-limited", `["limited","ok"]`, 403},
		{"unknown model", "sk-limited", `["nowhere"]`, 403},
		{"allowed", "sk-both", `["ok"]`, 200},
		{"allowed through its alias", "sk-both", `["alias-ok"]`, 200},
		{"master key", "sk-master", `["ok"]`, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := limited.Calls.Load() + ok.Calls.Load()
			_, out := f.postWant(t, "/v1/chat/completions", tt.key, `{"model":"limited","messages":[{"role":"user","content":"hi"}],"fallbacks":`+tt.fallbacks+`}`, tt.status)
			if tt.status != 403 {
				return
			}
			if _, _, code := openAIError(t, out); code != "model_not_allowed" {
				t.Fatalf("code %s, want model_not_allowed: %s", code, out)
			}
			if n := limited.Calls.Load() + ok.Calls.Load() - before; n != 0 {
				t.Fatalf("%d upstream calls before the refusal", n)
			}
		})
	}
}

// TestBearerHeaders: the key is read as LiteLLM reads it (and as the admin
// API does): x-litellm-api-key first, then Authorization, api-key,
// x-api-key.
func TestBearerHeaders(t *testing.T) {
	for _, tt := range []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"x-litellm-api-key", map[string]string{"X-Litellm-Api-Key": "sk-1"}, "sk-1"},
		{"x-litellm-api-key with Bearer", map[string]string{"X-Litellm-Api-Key": "Bearer sk-1"}, "sk-1"},
		{"x-litellm-api-key first", map[string]string{"X-Litellm-Api-Key": "sk-1", "Authorization": "Bearer sk-2"}, "sk-1"},
		{"blank x-litellm-api-key", map[string]string{"X-Litellm-Api-Key": " ", "Authorization": "Bearer sk-2"}, "sk-2"},
		{"authorization", map[string]string{"Authorization": "bearer sk-2", "Api-Key": "sk-3"}, "sk-2"},
		{"api-key", map[string]string{"Api-Key": "sk-3", "X-Api-Key": "sk-4"}, "sk-3"},
		{"x-api-key", map[string]string{"X-Api-Key": "sk-4"}, "sk-4"},
		{"none", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := gatewaytest.Request(http.MethodPost, "/v1/chat/completions", "", "")
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			if got := Bearer(r); got != tt.want {
				t.Fatalf("Bearer = %q, want %q", got, tt.want)
			}
		})
	}

	f := keyedFixture(t, mockYAML)
	resp := f.send(t, http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`), "X-Litellm-Api-Key", "sk-master", "Authorization", "Bearer sk-wrong")
	defer resp.Body.Close()
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 200 {
		t.Fatalf("status %d with the master key in x-litellm-api-key: %s", resp.StatusCode, out)
	}
}
