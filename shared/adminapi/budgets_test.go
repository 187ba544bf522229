package adminapi_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestBudgetRoutes: LiteLLM's /budget routes on both stores: create (a
// uuid when no budget_id), update only what the body gives, info, list,
// settings; hostile numbers are 400s naming the field.
func TestBudgetRoutes(t *testing.T) {
	onStores(t, func(t *testing.T, c client) {
		const m = "sk-master-test"
		b := c.must(m, "POST", "/budget/new", `{"budget_id":"gold","max_budget":10,"soft_budget":8,"rpm_limit":5,"tpm_limit":500,"max_parallel_requests":2,"budget_duration":"30d","model_max_budget":{"gpt-4o":{"max_budget":1,"budget_duration":"1d"}}}`)
		for field, want := range map[string]any{"budget_id": "gold", "max_budget": 10.0, "soft_budget": 8.0, "rpm_limit": 5.0, "tpm_limit": 500.0,
			"max_parallel_requests": 2.0, "budget_duration": "30d", "created_by": "master_key"} {
			if b[field] != want {
				t.Errorf("/budget/new %s = %v, want %v", field, b[field], want)
			}
		}
		if b["budget_reset_at"] == nil || fmt.Sprint(b["model_max_budget"]) != "map[gpt-4o:map[budget_duration:1d max_budget:1]]" {
			t.Errorf("/budget/new = %v; want budget_reset_at and model_max_budget", b)
		}
		if gen := c.must(m, "POST", "/budget/new", `{"max_budget":1}`); len(fmt.Sprint(gen["budget_id"])) != 36 {
			t.Errorf("generated budget_id = %v, want a uuid", gen["budget_id"])
		}
		c.errParam(m, "POST", "/budget/new", `{"budget_id":"gold"}`, 400, "budget_id")
		up := c.must(m, "POST", "/budget/update", `{"budget_id":"gold","max_budget":20}`)
		if up["max_budget"] != 20.0 || up["rpm_limit"] != 5.0 || up["budget_duration"] != "30d" {
			t.Errorf("/budget/update = %v; want max_budget 20, the rest kept", up)
		}
		c.errParam(m, "POST", "/budget/update", `{"max_budget":20}`, 400, "budget_id")
		c.errParam(m, "POST", "/budget/update", `{"budget_id":"nope","max_budget":20}`, 404, "budget_id")
		for _, body := range []string{
			`{"budget_id":"x","max_budget":-1}`, `{"budget_id":"x","max_budget":1e400}`, `{"budget_id":"x","max_budget":"NaN"}`,
			`{"budget_id":"x","soft_budget":-0.5}`, `{"budget_id":"x","rpm_limit":9223372036854775808}`, `{"budget_id":"x","tpm_limit":-3}`,
			`{"budget_id":"x","max_parallel_requests":1.5}`, `{"budget_id":"x","budget_duration":"1y"}`,
			`{"budget_id":"x","model_max_budget":{"m":{"max_budget":-1}}}`, `{"budget_id":"x","model_max_budget":{"m":{"rpm_limit":3,"max_budget":1}}}`,
			`{"budget_id":"x","model_max_budget":{"m":{"max_budget":1e12}}}`, `{"budget_id":"x","model_max_budget":{"m":{"max_budget":1,"budget_limit":2}}}`,
			`{"budget_id":"x","model_max_budget":{"":{"max_budget":1}}}`,
			`{"budget_id":"a#b"}`, `{"budget_id":"x","spend":3}`,
		} {
			code, _, raw := c.call(m, "POST", "/budget/new", body)
			if code != 400 {
				t.Errorf("/budget/new %s: status %d %s; want 400", body, code, raw)
			}
		}
		code, _, raw := c.call(m, "POST", "/budget/info", `{"budgets":["gold","nope"]}`)
		if code != 200 || !strings.Contains(raw, `"budget_id":"gold"`) || strings.Contains(raw, "nope") {
			t.Errorf("/budget/info: %d %s; want gold only", code, raw)
		}
		c.errParam(m, "POST", "/budget/info", `{"budgets":[]}`, 400, "budgets")
		if code, _, raw := c.call(m, "GET", "/budget/list", ""); code != 200 || strings.Count(raw, `"budget_id"`) != 2 {
			t.Errorf("/budget/list: %d %s; want the two budgets", code, raw)
		}
		code, _, raw = c.call(m, "GET", "/budget/settings?budget_id=gold", "")
		for _, want := range []string{`"field_name":"max_budget"`, `"field_value":20`, `"field_type":"Float"`, `"stored_in_db":true`, `"field_name":"model_max_budget"`} {
			if code != 200 || !strings.Contains(raw, want) {
				t.Errorf("/budget/settings: %d %s; want %s", code, raw, want)
			}
		}
	})
}

// TestBudgetLinks: end users and team memberships link a budget by
// budget_id (one that does not exist is a 400) and show its limits in
// litellm_budget_table; a linked budget cannot be deleted (a 400 naming
// the links) until they are unlinked.
func TestBudgetLinks(t *testing.T) {
	onStores(t, func(t *testing.T, c client) {
		const m = "sk-master-test"
		c.must(m, "POST", "/budget/new", `{"budget_id":"gold","max_budget":10,"rpm_limit":5}`)
		c.errParam(m, "POST", "/customer/new", `{"user_id":"c1","budget_id":"nope"}`, 400, "budget_id")
		c.errParam(m, "POST", "/customer/new", `{"user_id":"c1","budget_id":"gold","max_budget":3}`, 400, "budget_id")
		e := c.must(m, "POST", "/customer/new", `{"user_id":"c1","budget_id":"gold"}`)
		bt, _ := e["litellm_budget_table"].(map[string]any)
		if e["budget_id"] != "gold" || bt["max_budget"] != 10.0 || bt["rpm_limit"] != 5.0 {
			t.Errorf("/customer/new = %v; want budget_id gold and its limits", e)
		}
		c.must(m, "POST", "/team/new", `{"team_id":"t"}`)
		c.errParam(m, "POST", "/team/member_add", `{"team_id":"t","member":{"user_id":"u","role":"user"},"budget_id":"nope"}`, 400, "budget_id")
		c.must(m, "POST", "/team/member_add", `{"team_id":"t","member":{"user_id":"u","role":"user"},"budget_id":"gold"}`)
		mb := c.must(m, "POST", "/team/member_update", `{"team_id":"t","user_id":"u","role":"user"}`)
		if bt, _ := mb["litellm_budget_table"].(map[string]any); mb["budget_id"] != "gold" || bt["max_budget"] != 10.0 {
			t.Errorf("membership = %v; want budget_id gold and its max_budget", mb)
		}
		info := c.must(m, "GET", "/team/info?team_id=t", "")
		if got := fmt.Sprint(info["team_memberships"]); !strings.Contains(got, "budget_id:gold") || !strings.Contains(got, "max_budget:10") {
			t.Errorf("/team/info memberships = %s; want budget_id gold and its max_budget", got)
		}
		code, _, raw := c.call(m, "POST", "/budget/delete", `{"id":"gold"}`)
		if code != 400 || !strings.Contains(raw, "end user c1") || !strings.Contains(raw, "team member u of team t") {
			t.Errorf("/budget/delete of a linked budget: %d %s; want 400 naming both links", code, raw)
		}
		c.must(m, "POST", "/customer/update", `{"user_id":"c1","budget_id":null}`)
		c.must(m, "POST", "/team/member_update", `{"team_id":"t","user_id":"u","budget_id":null}`)
		if e := c.must(m, "GET", "/customer/info?end_user_id=c1", ""); e["budget_id"] != nil {
			t.Errorf("unlinked end user = %v", e)
		}
		c.must(m, "POST", "/budget/delete", `{"id":"gold"}`)
		c.errParam(m, "POST", "/budget/delete", `{"id":"gold"}`, 404, "id")
	})
}

// TestBudgetLinkNeedsProxyAdmin: a linked budget replaces a record's own
// limits, so only a proxy admin links one: a team admin may not link a
// budget to its team's memberships (its own included) nor add a member
// with one; an internal user may not put one on its key.
func TestBudgetLinkNeedsProxyAdmin(t *testing.T) {
	onStores(t, func(t *testing.T, c client) {
		ta := roleFixture(t, c, "")
		c.must("sk-master-test", "POST", "/budget/new", `{"budget_id":"big","max_budget":1000}`)
		forbiddenCall(c, ta, "POST", "/team/member_update", `{"team_id":"t","user_id":"mem","budget_id":"big"}`)
		forbiddenCall(c, ta, "POST", "/team/member_update", `{"team_id":"t","user_id":"ta","budget_id":"big"}`)
		forbiddenCall(c, ta, "POST", "/team/member_add", `{"team_id":"t","member":{"user_id":"newbie","role":"user"},"budget_id":"big"}`)
		forbiddenCall(c, ta, "POST", "/budget/update", `{"budget_id":"big","max_budget":5000}`)
		forbiddenCall(c, ta, "POST", "/customer/new", `{"user_id":"c9","budget_id":"big"}`)
		c.errParam(ta, "POST", "/key/generate", `{"budget_id":"big"}`, 400, "budget_id")
		info := c.must("sk-master-test", "GET", "/team/info?team_id=t", "")
		if strings.Contains(fmt.Sprint(info["team_memberships"]), "big") {
			t.Errorf("a membership links the budget: %v", info["team_memberships"])
		}
	})
}
