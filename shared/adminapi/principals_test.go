package adminapi_test

import (
	"reflect"
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
