package adminapi_test

import (
	"fmt"
	"strings"
	"testing"
)

// roleFixture creates, as the master key, team t with user ta as its
// admin (max_budget_in_team 1) and user mem as a member, and returns ta's
// own key. userBudget is ta's user body fields (e.g. a spent budget).
func roleFixture(t *testing.T, c client, userBudget string) string {
	t.Helper()
	const m = "sk-master-test"
	c.must(m, "POST", "/team/new", `{"team_id":"t","models":["gpt-4o"]}`)
	c.must(m, "POST", "/user/new", `{"user_id":"ta","user_role":"internal_user","auto_create_key":false`+userBudget+`}`)
	c.must(m, "POST", "/user/new", `{"user_id":"mem","user_role":"internal_user","auto_create_key":false}`)
	c.must(m, "POST", "/team/member_add", `{"team_id":"t","member":{"user_id":"ta","role":"admin"},"max_budget_in_team":1}`)
	c.must(m, "POST", "/team/member_add", `{"team_id":"t","member":{"user_id":"mem","role":"user"},"max_budget_in_team":1}`)
	return c.must(m, "POST", "/key/generate", `{"user_id":"ta"}`)["key"].(string)
}

// forbiddenCall asserts a 403 in the admin API's error shape.
func forbiddenCall(c client, key, method, path, body string) {
	c.t.Helper()
	code, m, raw := c.call(key, method, path, body)
	if e, _ := m["error"].(map[string]any); code != 403 || e == nil {
		c.t.Errorf("%s %s: status %d %s; want 403", path, body, code, raw)
	}
}

// TestTeamAdminOwnMembership: a team admin manages its team's members but
// not its own membership: it may not raise its own max_budget_in_team,
// change its own role, add itself again or leave (dropping its member
// budget); a proxy admin may. On both stores.
func TestTeamAdminOwnMembership(t *testing.T) {
	onStores(t, func(t *testing.T, c client) {
		ta := roleFixture(t, c, "")
		for _, body := range []string{
			`{"team_id":"t","user_id":"ta","max_budget_in_team":1000}`,
			`{"team_id":"t","user_id":"ta","role":"user"}`,
			`{"team_id":"t","user_id":"ta","role":"admin","max_budget_in_team":null}`,
		} {
			forbiddenCall(c, ta, "POST", "/team/member_update", body)
		}
		forbiddenCall(c, ta, "POST", "/team/member_add", `{"team_id":"t","member":{"user_id":"ta","role":"admin"},"max_budget_in_team":1000}`)
		forbiddenCall(c, ta, "POST", "/team/member_delete", `{"team_id":"t","user_id":"ta"}`)
		info := c.must("sk-master-test", "GET", "/team/info?team_id=t", "")
		for _, mb := range info["team_memberships"].([]any) {
			mb := mb.(map[string]any)
			if mb["user_id"] == "ta" {
				if b, _ := mb["litellm_budget_table"].(map[string]any); b == nil || b["max_budget"] != 1.0 {
					t.Errorf("ta's membership changed: %v", mb)
				}
			}
		}
		if !strings.Contains(fmt.Sprint(info["team_info"]), "ta") {
			t.Errorf("ta left team t: %v", info["team_info"])
		}
		// The team's other members are still its to manage; its own
		// membership is the proxy admin's.
		c.must(ta, "POST", "/team/member_update", `{"team_id":"t","user_id":"mem","max_budget_in_team":5,"role":"admin"}`)
		c.must("sk-master-test", "POST", "/team/member_update", `{"team_id":"t","user_id":"ta","max_budget_in_team":2}`)
	})
}

// TestTeamAdminSpentBudgetTeamKey: a team admin whose user budget is spent
// mints a team key naming no user (user_id null or "") and calls chat
// with it: the key is its own, so its spent user budget refuses the call.
// Nor may it make an existing key of its own belong to no user.
func TestTeamAdminSpentBudgetTeamKey(t *testing.T) {
	onStores(t, func(t *testing.T, c client) {
		ta := roleFixture(t, c, `,"max_budget":0`)
		for _, uid := range []string{`null`, `""`} {
			k := c.must(ta, "POST", "/key/generate", `{"team_id":"t","user_id":`+uid+`}`)
			if k["user_id"] != "ta" {
				t.Errorf("user_id %s: the key's user_id is %v, want ta", uid, k["user_id"])
			}
			code, m, raw := c.call(k["key"].(string), "POST", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
			e, _ := m["error"].(map[string]any)
			if code != 400 || e == nil || e["type"] != "budget_exceeded" || !strings.Contains(fmt.Sprint(e["message"]), "User=ta") {
				t.Errorf("user_id %s: chat with the team key: %d %s; want 400 budget_exceeded naming user ta", uid, code, raw)
			}
			code, m, raw = c.call(ta, "POST", "/key/update", fmt.Sprintf(`{"key":%q,"user_id":%s}`, k["key"], uid))
			if e, _ := m["error"].(map[string]any); code != 403 || e == nil || e["param"] != "user_id" {
				t.Errorf("user_id %s: /key/update to no user: %d %s; want 403 naming user_id", uid, code, raw)
			}
		}
	})
}
