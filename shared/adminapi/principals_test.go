package adminapi_test

import (
	"reflect"
	"strings"
	"testing"
)

// chatCode posts a chat request with key for model and returns the status.
func chatCode(c client, key, model string) int {
	c.t.Helper()
	code, _, _ := c.call(key, "POST", "/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
	return code
}

func aliasesOf(o map[string]any, field string) map[string]any {
	m, _ := o[field].(map[string]any)
	return m
}

// TestModelAliasRoutes: aliases on keys (/key/generate, /key/update, kept by
// /key/regenerate) and users (/user/new, /user/update), model_aliases on
// teams (/team/new, /team/update), as LiteLLM's docs send them: stored,
// shown in LiteLLM's shape and applied by the gateway.
func TestModelAliasRoutes(t *testing.T) {
	const m = "sk-master-test"
	onStores(t, func(t *testing.T, c client) {
		want := map[string]any{"my-gpt": "gpt-4o"}
		// LiteLLM's docs: curl /key/generate -d '{"models": [...], "aliases": {"my-gpt": "gpt-4o"}, ...}'
		gen := c.must(m, "POST", "/key/generate", `{"models": ["gpt-4o", "gpt-4o-mini"], "aliases": {"my-gpt": "gpt-4o"}, "duration": "20m", "metadata": {"user": "ishaan@berri.ai"}}`)
		secret, _ := gen["key"].(string)
		if !reflect.DeepEqual(aliasesOf(gen, "aliases"), want) {
			t.Fatalf("key/generate aliases = %v, want %v", gen["aliases"], want)
		}
		if code := chatCode(c, secret, "my-gpt"); code != 200 {
			t.Fatalf("chat with the key's alias: %d", code)
		}
		info := c.must(m, "GET", "/key/info?key="+secret, "")
		if !reflect.DeepEqual(aliasesOf(info["info"].(map[string]any), "aliases"), want) {
			t.Fatalf("key/info aliases = %v", info["info"])
		}
		// The alias resolves before model access: a key whose models name
		// the alias but not its group may not call it.
		narrow := c.must(m, "POST", "/key/generate", `{"models": ["my-mini"], "aliases": {"my-mini": "gpt-4o-mini"}}`)
		if code := chatCode(c, narrow["key"].(string), "my-mini"); code != 403 {
			t.Fatalf("chat through an alias to a group the key may not use: %d, want 403", code)
		}

		up := c.must(m, "POST", "/key/update", `{"key": "`+secret+`", "aliases": {"small": "gpt-4o-mini"}}`)
		if !reflect.DeepEqual(aliasesOf(up, "aliases"), map[string]any{"small": "gpt-4o-mini"}) {
			t.Fatalf("key/update aliases = %v", up["aliases"])
		}
		if code := chatCode(c, secret, "my-gpt"); code != 404 {
			t.Fatalf("chat with a removed alias: %d, want 404", code)
		}
		regen := c.must(m, "POST", "/key/regenerate", `{"key": "`+secret+`"}`)
		if !reflect.DeepEqual(aliasesOf(regen, "aliases"), map[string]any{"small": "gpt-4o-mini"}) {
			t.Fatalf("key/regenerate aliases = %v", regen["aliases"])
		}
		if code := chatCode(c, regen["key"].(string), "small"); code != 200 {
			t.Fatalf("chat with the regenerated key's alias: %d", code)
		}
		c.errParam(m, "POST", "/key/update", `{"key": "`+secret+`", "aliases": {"x": 1}}`, 400, "aliases")
		c.errParam(m, "POST", "/key/update", `{"key": "`+secret+`", "aliases": {"x": ""}}`, 400, "aliases")
		c.errParam(m, "POST", "/key/update", `{"key": "`+secret+`", "aliases": ["x"]}`, 400, "aliases")
		if cleared := c.must(m, "POST", "/key/update", `{"key": "`+regen["key"].(string)+`", "aliases": {}}`); len(aliasesOf(cleared, "aliases")) != 0 {
			t.Fatalf("key/update aliases {} kept %v", cleared["aliases"])
		}

		// Teams: model_aliases, shown in litellm_model_table as LiteLLM's team_info does.
		team := c.must(m, "POST", "/team/new", `{"team_alias": "my-new-team", "team_id": "aliased", "model_aliases": {"team-fast": "gpt-4o-mini"}}`)
		if tbl, _ := team["litellm_model_table"].(map[string]any); !reflect.DeepEqual(aliasesOf(tbl, "model_aliases"), map[string]any{"team-fast": "gpt-4o-mini"}) {
			t.Fatalf("team/new litellm_model_table = %v", team["litellm_model_table"])
		}
		tk := c.must(m, "POST", "/key/generate", `{"team_id": "aliased"}`)["key"].(string)
		if code := chatCode(c, tk, "team-fast"); code != 200 {
			t.Fatalf("chat with the team's alias: %d", code)
		}
		tu := c.must(m, "POST", "/team/update", `{"team_id": "aliased", "model_aliases": {"team-big": "gpt-4o"}}`)
		if !reflect.DeepEqual(aliasesOf(tu["data"].(map[string]any), "model_aliases"), map[string]any{"team-big": "gpt-4o"}) {
			t.Fatalf("team/update = %v", tu)
		}
		ti := c.must(m, "GET", "/team/info?team_id=aliased", "")
		if tbl, _ := ti["team_info"].(map[string]any)["litellm_model_table"].(map[string]any); !reflect.DeepEqual(aliasesOf(tbl, "model_aliases"), map[string]any{"team-big": "gpt-4o"}) {
			t.Fatalf("team/info = %v", ti["team_info"])
		}
		if code := chatCode(c, tk, "team-big"); code != 200 {
			t.Fatalf("chat with the team's new alias: %d", code)
		}

		// Users: aliases apply to the user's keys.
		u := c.must(m, "POST", "/user/new", `{"user_id": "aliased-user", "aliases": {"u-model": "gpt-4o"}}`)
		if !reflect.DeepEqual(aliasesOf(u, "aliases"), map[string]any{"u-model": "gpt-4o"}) {
			t.Fatalf("user/new aliases = %v", u["aliases"])
		}
		if code := chatCode(c, u["key"].(string), "u-model"); code != 200 {
			t.Fatalf("chat with the user's alias: %d", code)
		}
		uu := c.must(m, "POST", "/user/update", `{"user_id": "aliased-user", "aliases": {"u-small": "gpt-4o-mini"}}`)
		if !reflect.DeepEqual(aliasesOf(uu["data"].(map[string]any), "aliases"), map[string]any{"u-small": "gpt-4o-mini"}) {
			t.Fatalf("user/update = %v", uu)
		}
		if code := chatCode(c, u["key"].(string), "u-small"); code != 200 {
			t.Fatalf("chat with the user's new alias: %d", code)
		}
	})
}

// membersWithRoles returns a team object's members_with_roles by user id.
func membersWithRoles(t *testing.T, team map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	list, ok := team["members_with_roles"].([]any)
	if !ok {
		t.Fatalf("no members_with_roles in %v", team)
	}
	for _, m := range list {
		mm := m.(map[string]any)
		out[mm["user_id"].(string)] = mm
	}
	return out
}

// TestUserTeamRoutes: /user/new with team_id joins the team as a user
// with its email; /user/new and /user/update set spend (0 resets a spent
// budget); /team/new makes a caller with a user id the team's admin (the
// master key adds nobody); a member added by user_email keeps it and can
// be removed by it; removing a non-member is LiteLLM's 400.
func TestUserTeamRoutes(t *testing.T) {
	const m = "sk-master-test"
	onStores(t, func(t *testing.T, c client) {
		team := c.must(m, "POST", "/team/new", `{"team_alias": "my-new-team", "team_id": "t-join"}`)
		if got := membersWithRoles(t, team); len(got) != 0 {
			t.Fatalf("team/new with the master key has members %v", got)
		}

		u := c.must(m, "POST", "/user/new", `{"user_email": "krrish@berri.ai", "user_role": "internal_user", "team_id": "t-join"}`)
		uid, _ := u["user_id"].(string)
		if teams, _ := u["teams"].([]any); len(teams) != 1 || teams[0] != "t-join" {
			t.Fatalf("user/new with team_id: teams %v", u["teams"])
		}
		info := c.must(m, "GET", "/team/info?team_id=t-join", "")
		if mb := membersWithRoles(t, info["team_info"].(map[string]any))[uid]; mb == nil || mb["role"] != "user" || mb["user_email"] != "krrish@berri.ai" {
			t.Fatalf("team/info members_with_roles = %v", info["team_info"].(map[string]any)["members_with_roles"])
		}
		c.errParam(m, "POST", "/user/new", `{"user_id": "ghost", "team_id": "nope"}`, 404, "team_id")
		// teams as LiteLLM's objects: a role and a budget in the team.
		c.must(m, "POST", "/user/new", `{"user_id": "lead", "teams": [{"team_id": "t-join", "user_role": "admin", "max_budget_in_team": 2}]}`)
		info = c.must(m, "GET", "/team/info?team_id=t-join", "")
		if mb := membersWithRoles(t, info["team_info"].(map[string]any))["lead"]; mb == nil || mb["role"] != "admin" {
			t.Fatalf("user/new teams object: members %v", info["team_info"].(map[string]any)["members_with_roles"])
		}
		budgeted := false
		for _, tm := range info["team_memberships"].([]any) {
			tm := tm.(map[string]any)
			budgeted = budgeted || tm["user_id"] == "lead" && tm["litellm_budget_table"].(map[string]any)["max_budget"] == 2.0
		}
		if !budgeted {
			t.Fatalf("user/new teams object: memberships %v, want lead with max_budget 2", info["team_memberships"])
		}
		c.errParam(m, "POST", "/user/new", `{"user_id": "ghost", "teams": [{"team_id": "t-join", "user_role": "owner"}]}`, 400, "teams")
		c.errParam(m, "POST", "/user/new", `{"user_id": "ghost", "teams": [{"team_id": "t-join", "max_budget": 1}]}`, 400, "teams")
		c.errParam(m, "POST", "/user/new", `{"user_id": "ghost", "teams": ["nope"]}`, 404, "teams")
		c.errParam(m, "GET", "/user/info?user_id=ghost", "", 404, "user_id")

		// Spend: set on creation, reset by update.
		sp := c.must(m, "POST", "/user/new", `{"user_id": "spender", "max_budget": 1, "spend": 5}`)
		if sp["spend"] != 5.0 {
			t.Fatalf("user/new spend = %v", sp["spend"])
		}
		key := sp["key"].(string)
		if code := chatCode(c, key, "gpt-4o"); code != 400 {
			t.Fatalf("chat of a user over budget: %d, want 400", code)
		}
		up := c.must(m, "POST", "/user/update", `{"user_id": "spender", "spend": 0}`)
		if d := up["data"].(map[string]any); d["spend"] != 0.0 || d["max_budget"] != 1.0 {
			t.Fatalf("user/update spend 0 = %v", d)
		}
		if code := chatCode(c, key, "gpt-4o"); code != 200 {
			t.Fatalf("chat after the spend reset: %d, want 200", code)
		}
		c.errParam(m, "POST", "/user/update", `{"user_id": "spender", "spend": -1}`, 400, "spend")
		c.errParam(m, "POST", "/key/update", `{"key": "`+key+`", "spend": 3}`, 400, "spend")

		// A proxy admin user creating a team becomes its admin, once.
		boss := c.must(m, "POST", "/user/new", `{"user_id": "boss", "user_role": "proxy_admin"}`)["key"].(string)
		bt := c.must(boss, "POST", "/team/new", `{"team_alias": "boss-team"}`)
		if mb := membersWithRoles(t, bt)["boss"]; mb == nil || mb["role"] != "admin" {
			t.Fatalf("team/new by a user: members %v", bt["members_with_roles"])
		}
		listed := c.must(boss, "POST", "/team/new", `{"team_alias": "boss-team-2", "members_with_roles": [{"role": "user", "user_id": "boss"}]}`)
		if got := membersWithRoles(t, listed); len(got) != 1 || got["boss"]["role"] != "user" {
			t.Fatalf("team/new listing its creator: members %v", listed["members_with_roles"])
		}

		// Members by email.
		added := c.must(m, "POST", "/team/member_add", `{"team_id": "t-join", "member": {"role": "user", "user_email": "new@berri.ai"}}`)
		var newID string
		for id, mb := range membersWithRoles(t, added) {
			if mb["user_email"] == "new@berri.ai" {
				newID = id
			}
		}
		if users, _ := added["updated_users"].([]any); newID == "" || len(users) != 1 || users[0].(map[string]any)["user_email"] != "new@berri.ai" {
			t.Fatalf("team/member_add by email = %v", added)
		}
		left := c.must(m, "POST", "/team/member_delete", `{"team_id": "t-join", "user_email": "new@berri.ai"}`)
		if _, still := membersWithRoles(t, left)[newID]; still {
			t.Fatalf("member_delete by email left %v", left["members_with_roles"])
		}
		code, body, raw := c.call(m, "POST", "/team/member_delete", `{"team_id": "t-join", "user_email": "new@berri.ai"}`)
		if e, _ := body["error"].(map[string]any); code != 400 || e == nil || !strings.HasPrefix(e["message"].(string), "User not found in team") {
			t.Fatalf("member_delete of a non-member: %d %s; want LiteLLM's 400 User not found in team", code, raw)
		}
		c.errParam(m, "POST", "/team/member_delete", `{"team_id": "t-join", "user_id": "boss"}`, 400, "user_id")
	})
}

// TestUserModelsOnPersonalKeys: a user's models bound its personal keys
// (of no team), and not its team keys, which its team's models bound, as
// LiteLLM's auth checks apply them (can_user_call_model "if personal key").
func TestUserModelsOnPersonalKeys(t *testing.T) {
	const m = "sk-master-test"
	onStores(t, func(t *testing.T, c client) {
		c.must(m, "POST", "/team/new", `{"team_id":"tu","models":["gpt-4o-mini"]}`)
		c.must(m, "POST", "/user/new", `{"user_id":"um","models":["gpt-4o"],"auto_create_key":false}`)
		c.must(m, "POST", "/team/member_add", `{"team_id":"tu","member":{"user_id":"um","role":"user"}}`)
		personal := c.must(m, "POST", "/key/generate", `{"user_id":"um"}`)["key"].(string)
		team := c.must(m, "POST", "/key/generate", `{"user_id":"um","team_id":"tu"}`)["key"].(string)
		chat := func(key, model string) int {
			code, _, _ := c.call(key, "POST", "/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
			return code
		}
		for _, tc := range []struct {
			key, name, model string
			want             int
		}{
			{personal, "personal", "gpt-4o", 200},
			{personal, "personal", "gpt-4o-mini", 403}, // not among the user's models
			{team, "team", "gpt-4o-mini", 200},         // the team's models, not the user's
			{team, "team", "gpt-4o", 403},              // not among the team's models
		} {
			if code := chat(tc.key, tc.model); code != tc.want {
				t.Errorf("%s key, model %s: %d, want %d", tc.name, tc.model, code, tc.want)
			}
		}
	})
}
