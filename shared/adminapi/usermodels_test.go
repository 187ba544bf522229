package adminapi_test

import (
	"testing"
)

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
