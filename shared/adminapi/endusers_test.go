package adminapi_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
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

// TestCustomerTracked: a call with "user" naming no end user creates it
// through the spend pipeline, as LiteLLM does: /customer/info answers it
// with its spend, /customer/list lists it; its next calls add to it.
func TestCustomerTracked(t *testing.T) {
	const m = "sk-master-test"
	onStoresWith(t, pricedConfig, func(t *testing.T, gw *app.Gateway, c client) {
		c.errParam(m, "GET", "/customer/info?end_user_id=ishaan3", "", 404, "end_user_id")
		for i := 0; i < 2; i++ {
			c.must(m, "POST", "/v1/chat/completions", `{"model":"gpt-4o","user":"ishaan3","messages":[{"role":"user","content":"hi"}]}`)
		}
		gw.FlushSpend(context.Background())
		info := c.must(m, "GET", "/customer/info?end_user_id=ishaan3", "")
		spent, _ := info["spend"].(float64)
		if info["user_id"] != "ishaan3" || spent <= 0 {
			t.Fatalf("customer/info after two calls = %v", info)
		}
		if _, _, raw := c.call(m, "GET", "/customer/list", ""); !strings.Contains(raw, `"user_id":"ishaan3"`) {
			t.Fatalf("customer/list = %s", raw)
		}
		c.must(m, "POST", "/v1/chat/completions", `{"model":"gpt-4o","user":"ishaan3","messages":[{"role":"user","content":"hi"}]}`)
		gw.FlushSpend(context.Background())
		again := c.must(m, "GET", "/customer/info?end_user_id=ishaan3", "")
		if got := again["spend"].(float64); math.Abs(got-1.5*spent) > 1e-9 {
			t.Fatalf("spend after a third call %v, want %v", got, 1.5*spent)
		}
		// LiteLLM's docs write max_budget as a string.
		up := c.must(m, "POST", "/customer/update", `{"user_id":"ishaan3","max_budget":"0"}`)
		if up["litellm_budget_table"].(map[string]any)["max_budget"] != 0.0 {
			t.Fatalf("customer/update max_budget \"0\" = %v", up)
		}
		if code, _, raw := c.call(m, "POST", "/v1/chat/completions", `{"model":"gpt-4o","user":"ishaan3","messages":[{"role":"user","content":"hi"}]}`); code != 400 {
			t.Fatalf("a call of an end user at its max_budget 0: %d %s", code, raw)
		}
	})
}
