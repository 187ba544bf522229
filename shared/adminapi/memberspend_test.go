package adminapi_test

import (
	"context"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
)

// TestMemberSpend: a team member's calls through its team key add to its
// membership, shown in /team/info's team_memberships (LiteLLM's shape),
// and its max_budget_in_team refuses its next call once spent; the
// member's key for another team is not bounded by it.
func TestMemberSpend(t *testing.T) {
	const m = "sk-master-test"
	for _, store := range []string{app.StoreMemory, app.StoreDynamoDB} {
		t.Run(store, func(t *testing.T) {
			gw := buildWith(t, pricedConfig, store, nil)
			c := client{t, gw.HTTP}
			c.must(m, "POST", "/team/new", `{"team_id":"tm"}`)
			c.must(m, "POST", "/team/new", `{"team_id":"other"}`)
			c.must(m, "POST", "/team/member_add", `{"team_id":"tm","member":{"user_id":"mu","role":"user"},"max_budget_in_team":0.000001}`)
			k := c.must(m, "POST", "/key/generate", `{"team_id":"tm","user_id":"mu"}`)["key"].(string)
			o := c.must(m, "POST", "/key/generate", `{"team_id":"other","user_id":"mu"}`)["key"].(string)
			chat := func(key string) int {
				code, _, _ := c.call(key, "POST", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
				return code
			}
			if code := chat(k); code != 200 {
				t.Fatalf("first call: %d", code)
			}
			gw.FlushSpend(context.Background())
			info := c.must(m, "GET", "/team/info?team_id=tm", "")
			ms := info["team_memberships"].([]any)
			if len(ms) != 1 {
				t.Fatalf("team_memberships = %v", ms)
			}
			mb := ms[0].(map[string]any)
			if sp, _ := mb["spend"].(float64); mb["user_id"] != "mu" || sp <= 0 || mb["litellm_budget_table"].(map[string]any)["max_budget"] != 0.000001 {
				t.Fatalf("membership after a call = %v", mb)
			}
			if code := chat(k); code != 400 {
				t.Fatalf("a call past max_budget_in_team: %d, want 400", code)
			}
			if code := chat(o); code != 200 {
				t.Fatalf("the member's key of another team: %d, want 200", code)
			}
		})
	}
}
