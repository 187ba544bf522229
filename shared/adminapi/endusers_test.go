package adminapi_test

import (
	"strings"
	"testing"
)

// The /end_user/* routes are the /customer/* handlers: the authorization
// matrix holds the same cells for them.
func init() {
	for name, c := range matrix {
		if strings.Contains(name, "/customer/") {
			c.path = strings.Replace(c.path, "/customer/", "/end_user/", 1)
			matrix[strings.Replace(name, "/customer/", "/end_user/", 1)] = c
		}
	}
}

// TestEndUserRoutes: LiteLLM's /end_user/* names of the customer routes,
// with its bodies, over the same records as /customer/*: create, read,
// update, block (the gateway refuses the end user), unblock, list, delete.
func TestEndUserRoutes(t *testing.T) {
	const m = "sk-master-test"
	onStores(t, func(t *testing.T, c client) {
		chat := func() int {
			code, _, _ := c.call(m, "POST", "/v1/chat/completions", `{"model":"gpt-4o","user":"ishaan3","messages":[{"role":"user","content":"hi"}]}`)
			return code
		}
		created := c.must(m, "POST", "/end_user/new", `{"user_id": "ishaan3", "alias": "Ishaan", "max_budget": 0.5}`)
		if created["user_id"] != "ishaan3" || created["litellm_budget_table"].(map[string]any)["max_budget"] != 0.5 {
			t.Fatalf("end_user/new = %v", created)
		}
		if info := c.must(m, "GET", "/customer/info?end_user_id=ishaan3", ""); info["alias"] != "Ishaan" {
			t.Fatalf("customer/info of an end_user/new record = %v", info)
		}
		up := c.must(m, "POST", "/end_user/update", `{"user_id": "ishaan3", "max_budget": 1}`)
		if up["litellm_budget_table"].(map[string]any)["max_budget"] != 1.0 {
			t.Fatalf("end_user/update = %v", up)
		}
		if b := c.must(m, "POST", "/end_user/block", `{"user_ids": ["ishaan3"]}`); b["blocked_users"].([]any)[0] != "ishaan3" {
			t.Fatalf("end_user/block = %v", b)
		}
		if info := c.must(m, "GET", "/end_user/info?end_user_id=ishaan3", ""); info["blocked"] != true {
			t.Fatalf("end_user/info after block = %v", info)
		}
		if code := chat(); code != 403 {
			t.Fatalf("chat for a blocked end user: %d, want 403", code)
		}
		c.must(m, "POST", "/end_user/unblock", `{"user_ids": ["ishaan3"]}`)
		if code := chat(); code != 200 {
			t.Fatalf("chat for an unblocked end user: %d", code)
		}
		if _, list, raw := c.call(m, "GET", "/end_user/list", ""); list != nil || !strings.Contains(raw, `"user_id":"ishaan3"`) {
			t.Fatalf("end_user/list = %s", raw)
		}
		if d := c.must(m, "POST", "/end_user/delete", `{"user_ids": ["ishaan3"]}`); d["deleted_customers"] != 1.0 {
			t.Fatalf("end_user/delete = %v", d)
		}
		c.errParam(m, "GET", "/customer/info?end_user_id=ishaan3", "", 404, "end_user_id")
		c.errParam(m, "POST", "/end_user/block", `{"user_ids": ["nobody"]}`, 404, "user_ids")
	})
}
