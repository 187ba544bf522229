package adminapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// list calls a route that answers a JSON list.
func (c client) list(key, method, path, body string) []map[string]any {
	c.t.Helper()
	code, _, raw := c.call(key, method, path, body)
	var out []map[string]any
	if code != 200 || json.Unmarshal([]byte(raw), &out) != nil {
		c.t.Fatalf("%s %s %s: status %d: %s; want 200 and a list", method, path, body, code, raw)
	}
	return out
}

func ids(objs []any, field string) []string {
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprint(o.(map[string]any)[field]))
	}
	return out
}

// TestOrganizations walks LiteLLM's /organization routes with LiteLLM's
// request and response JSON, and a team's bounds within its organization,
// on both stores.
func TestOrganizations(t *testing.T) {
	onStores(t, func(t *testing.T, c client) {
		const m = "sk-master-test"
		c.must(m, "POST", "/budget/new", `{"budget_id":"b1","max_budget":10,"rpm_limit":5}`)
		gen := c.must(m, "POST", "/organization/new", `{"organization_alias":"acme","models":["gpt-4o"],"max_budget":10,"budget_id":"b1","rpm_limit":5}`)
		if id, _ := gen["organization_id"].(string); len(id) != 36 || gen["organization_alias"] != "acme" || gen["budget_id"] != "b1" || gen["created_by"] != "master_key" {
			t.Errorf("/organization/new = %v", gen)
		}
		if b, _ := gen["litellm_budget_table"].(map[string]any); b == nil || b["max_budget"] != 10.0 || b["rpm_limit"] != 5.0 || b["budget_id"] != "b1" {
			t.Errorf("litellm_budget_table = %v", gen["litellm_budget_table"])
		}
		c.must(m, "POST", "/organization/new", `{"organization_id":"org-a","organization_alias":"A","models":["gpt-4o","claude"],"max_budget":10}`)
		c.errParam(m, "POST", "/organization/new", `{"organization_id":"org-a"}`, 400, "organization_id")

		// Teams in the organization: within its models and max_budget.
		team := c.must(m, "POST", "/team/new", `{"team_id":"ta","organization_id":"org-a","models":["gpt-4o"],"max_budget":5}`)
		if team["organization_id"] != "org-a" {
			t.Errorf("/team/new organization_id = %v", team["organization_id"])
		}
		c.errParam(m, "POST", "/team/new", `{"team_id":"tx","organization_id":"org-a","models":["gpt-5"]}`, 400, "models")
		c.errParam(m, "POST", "/team/new", `{"team_id":"tx","organization_id":"org-a","max_budget":11}`, 400, "max_budget")
		c.errParam(m, "POST", "/team/new", `{"team_id":"tx","organization_id":"nope"}`, 400, "organization_id")
		c.errParam(m, "POST", "/team/update", `{"team_id":"ta","max_budget":20}`, 400, "max_budget")
		c.errParam(m, "POST", "/team/update", `{"team_id":"ta","models":["gpt-5"]}`, 400, "models")
		c.must(m, "POST", "/team/update", `{"team_id":"ta","max_budget":10}`)
		if _, _, raw := c.call(m, "POST", "/team/new", `{"team_id":"tx","organization_id":"org-a","max_budget":11}`); !strings.Contains(raw, "exceeds organization's max_budget") {
			t.Errorf("LiteLLM's message: %s", raw)
		}

		// Members, by id and by email (a user is created), with a budget.
		add := c.must(m, "POST", "/organization/member_add", `{"organization_id":"org-a","member":[{"user_id":"u1","role":"org_admin"},{"user_email":"e@example.com","role":"internal_user"}],"max_budget_in_organization":3}`)
		ms, _ := add["updated_organization_memberships"].([]any)
		if len(ms) != 2 || len(add["updated_users"].([]any)) != 2 {
			t.Fatalf("member_add = %v", add)
		}
		if mb := ms[0].(map[string]any); mb["user_role"] != "org_admin" || mb["organization_id"] != "org-a" || mb["litellm_budget_table"].(map[string]any)["max_budget"] != 3.0 {
			t.Errorf("membership = %v", mb)
		}
		c.errParam(m, "POST", "/organization/member_add", `{"organization_id":"org-a","member":{"user_id":"u2","role":"admin"}}`, 400, "member")
		c.errParam(m, "POST", "/organization/member_add", `{"organization_id":"org-a","member":{"user_id":"u1","role":"internal_user"}}`, 400, "member")
		c.errParam(m, "POST", "/organization/member_add", `{"organization_id":"nope","member":{"user_id":"u2","role":"internal_user"}}`, 404, "organization_id")
		up := c.must(m, "PATCH", "/organization/member_update", `{"organization_id":"org-a","user_id":"u1","role":"internal_user_viewer","max_budget_in_organization":4}`)
		if up["user_role"] != "internal_user_viewer" || up["litellm_budget_table"].(map[string]any)["max_budget"] != 4.0 {
			t.Errorf("member_update = %v", up)
		}
		c.errParam(m, "PATCH", "/organization/member_update", `{"organization_id":"org-a","user_id":"u1","role":"proxy_admin"}`, 400, "role")
		c.errParam(m, "PATCH", "/organization/member_update", `{"organization_id":"org-a","user_id":"nobody","role":"internal_user"}`, 404, "user_id")
		c.must(m, "DELETE", "/organization/member_delete", `{"organization_id":"org-a","user_email":"e@example.com"}`)
		c.errParam(m, "DELETE", "/organization/member_delete", `{"organization_id":"org-a","user_email":"e@example.com"}`, 404, "user_id")
		if u := c.must(m, "GET", "/user/info?user_id=u1", ""); !strings.Contains(fmt.Sprint(u), "u1") {
			t.Errorf("the member's user: %v", u)
		}

		info := c.must(m, "GET", "/organization/info?organization_id=org-a", "")
		if got := ids(info["teams"].([]any), "team_id"); fmt.Sprint(got) != "[ta]" {
			t.Errorf("info teams = %v", got)
		}
		if got := ids(info["members"].([]any), "user_id"); fmt.Sprint(got) != "[u1]" {
			t.Errorf("info members = %v", got)
		}
		if l := c.list(m, "POST", "/organization/info", `{"organizations":["org-a"]}`); len(l) != 1 || l[0]["organization_id"] != "org-a" {
			t.Errorf("POST /organization/info = %v", l)
		}
		c.errParam(m, "GET", "/organization/info?organization_id=nope", "", 404, "organization_id")
		if l := c.list(m, "GET", "/organization/list", ""); len(l) != 2 {
			t.Errorf("/organization/list has %d organizations, want 2", len(l))
		}
		upd := c.must(m, "PATCH", "/organization/update", `{"organization_id":"org-a","organization_alias":"A2","max_budget":null,"updated_by":"someone"}`)
		if upd["organization_alias"] != "A2" || upd["updated_by"] != "master_key" || upd["litellm_budget_table"].(map[string]any)["max_budget"] != nil || len(upd["teams"].([]any)) != 1 {
			t.Errorf("/organization/update = %v", upd)
		}
		// LiteLLM's methods: PATCH update, DELETE delete.
		c.errParam(m, "POST", "/organization/update", `{"organization_id":"org-a"}`, 405, "")
		// An update links only a budget that exists, as /organization/new
		// does (the shared record flow checks it).
		c.errParam(m, "PATCH", "/organization/update", `{"organization_id":"org-a","budget_id":"no-such-budget"}`, 400, "budget_id")
		if upd := c.must(m, "PATCH", "/organization/update", `{"organization_id":"org-a","budget_id":"b1"}`); upd["budget_id"] != "b1" {
			t.Errorf("/organization/update budget_id = %v", upd["budget_id"])
		}
		c.must(m, "PATCH", "/organization/update", `{"organization_id":"org-a","budget_id":null}`)

		// An organization with teams is not deleted; without, it is.
		code, _, raw := c.call(m, "DELETE", "/organization/delete", `{"organization_ids":["org-a"]}`)
		if code != 400 || !strings.Contains(raw, "ta") || !strings.Contains(raw, "organization_ids") {
			t.Errorf("deleting an organization with a team: %d %s; want 400 naming the team", code, raw)
		}
		c.must(m, "GET", "/organization/info?organization_id=org-a", "")
		c.must(m, "POST", "/team/delete", `{"team_ids":["ta"]}`)
		if l := c.list(m, "DELETE", "/organization/delete", `{"organization_ids":["org-a"]}`); len(l) != 1 || l[0]["organization_id"] != "org-a" {
			t.Errorf("/organization/delete = %v", l)
		}
		c.errParam(m, "GET", "/organization/info?organization_id=org-a", "", 404, "organization_id")
		c.errParam(m, "DELETE", "/organization/delete", `{"organization_ids":["org-a"]}`, 404, "organization_ids")
	})
}

// TestOrganizationBadInput: hostile numbers, ids and fields are 400s
// naming the field, on both stores.
func TestOrganizationBadInput(t *testing.T) {
	onStores(t, func(t *testing.T, c client) {
		const m = "sk-master-test"
		c.must(m, "POST", "/organization/new", `{"organization_id":"o"}`)
		for _, r := range []struct{ method, path, body, param string }{
			{"POST", "/organization/new", `{"max_budget":9223372036854775808}`, "max_budget"},
			{"POST", "/organization/new", `{"max_budget":-1}`, "max_budget"},
			{"POST", "/organization/new", `{"soft_budget":1e400}`, "soft_budget"},
			{"POST", "/organization/new", `{"rpm_limit":9223372036854775808}`, "rpm_limit"},
			{"POST", "/organization/new", `{"tpm_limit":-5}`, "tpm_limit"},
			{"POST", "/organization/new", `{"tpm_limit":1.5}`, "tpm_limit"},
			{"POST", "/organization/new", `{"max_parallel_requests":-1}`, "max_parallel_requests"},
			{"POST", "/organization/new", `{"budget_duration":"fortnight"}`, "budget_duration"},
			{"POST", "/organization/new", `{"models":"gpt-4o"}`, "models"},
			{"POST", "/organization/new", `{"metadata":[1]}`, "metadata"},
			{"POST", "/organization/new", `{"model_max_budget":{"gpt-4o":{"budget_limit":1}}}`, "model_max_budget"},
			{"POST", "/organization/new", `{"tags":["a"]}`, "tags"},
			{"POST", "/organization/new", `{"spend":5}`, "spend"},
			{"POST", "/organization/new", `{"colour":"red"}`, "colour"},
			{"PATCH", "/organization/update", `{"organization_id":"o","max_budget":1e16}`, "max_budget"},
			{"PATCH", "/organization/update", `{"max_budget":1}`, "organization_id"},
			{"POST", "/organization/member_add", `{"organization_id":"o","member":{"user_id":"u","role":"internal_user"},"max_budget_in_organization":-1}`, "max_budget_in_organization"},
			{"POST", "/organization/member_add", `{"organization_id":"o","member":{"role":"internal_user"}}`, "member"},
			{"PATCH", "/organization/member_update", `{"organization_id":"o","user_id":"u","max_budget_in_organization":9223372036854775808}`, "max_budget_in_organization"},
		} {
			t.Run(r.path+" "+r.body, func(t *testing.T) { badField(client{t, c.h}, r.method, r.path, r.body, r.param) })
		}
		if code, _, raw := c.call(m, "POST", "/organization/new", `{"max_budget":NaN}`); code != 400 {
			t.Errorf("NaN: %d %s", code, raw)
		}
		for name, id := range hostileIDs {
			j, _ := json.Marshal(id)
			v, q := string(j), url.QueryEscape(id)
			for _, r := range []struct{ method, path, body, param string }{
				{"POST", "/organization/new", `{"organization_id":` + v + `}`, "organization_id"},
				{"POST", "/organization/new", `{"budget_id":` + v + `}`, "budget_id"},
				{"PATCH", "/organization/update", `{"organization_id":` + v + `}`, "organization_id"},
				{"GET", "/organization/info?organization_id=" + q, "", "organization_id"},
				{"POST", "/organization/info", `{"organizations":[` + v + `]}`, "organizations"},
				{"DELETE", "/organization/delete", `{"organization_ids":[` + v + `]}`, "organization_ids"},
				{"POST", "/organization/member_add", `{"organization_id":` + v + `,"member":{"user_id":"u","role":"internal_user"}}`, "organization_id"},
				{"POST", "/organization/member_add", `{"organization_id":"o","member":{"user_id":` + v + `,"role":"internal_user"}}`, "member"},
				{"PATCH", "/organization/member_update", `{"organization_id":"o","user_id":` + v + `,"role":"internal_user"}`, "user_id"},
				{"DELETE", "/organization/member_delete", `{"organization_id":"o","user_id":` + v + `}`, "user_id"},
				{"POST", "/team/new", `{"team_id":"t","organization_id":` + v + `}`, "organization_id"},
			} {
				t.Run(fmt.Sprintf("%s %s %s", name, r.path, r.param), func(t *testing.T) { badField(client{t, c.h}, r.method, r.path, r.body, r.param) })
			}
		}
		// Keys and users name no organization of their own.
		c.errParam(m, "POST", "/key/generate", `{"organization_id":"o"}`, 400, "organization_id")
		c.errParam(m, "POST", "/user/new", `{"user_id":"x","organization_id":"o"}`, 400, "organization_id")
	})
}

// TestOrgAdminScope: an org_admin of organization A manages A's teams,
// their members and keys, and A's members; it may not touch organization
// B's, create or change organizations, raise its own organization's
// budget, change its own membership, or move a team out of A. On both
// stores.
func TestOrgAdminScope(t *testing.T) {
	onStores(t, func(t *testing.T, c client) {
		const m = "sk-master-test"
		c.must(m, "POST", "/organization/new", `{"organization_id":"A","max_budget":10}`)
		c.must(m, "POST", "/organization/new", `{"organization_id":"B"}`)
		for _, u := range []string{"oa", "ma", "mb"} {
			c.must(m, "POST", "/user/new", `{"user_id":"`+u+`","user_role":"internal_user","auto_create_key":false}`)
		}
		c.must(m, "POST", "/organization/member_add", `{"organization_id":"A","member":[{"user_id":"oa","role":"org_admin"},{"user_id":"ma","role":"internal_user"}]}`)
		c.must(m, "POST", "/organization/member_add", `{"organization_id":"B","member":{"user_id":"mb","role":"internal_user"}}`)
		c.must(m, "POST", "/team/new", `{"team_id":"ta","organization_id":"A","members_with_roles":[{"user_id":"ma","role":"user"}]}`)
		c.must(m, "POST", "/team/new", `{"team_id":"tb","organization_id":"B","members_with_roles":[{"user_id":"mb","role":"user"}]}`)
		keyA := c.must(m, "POST", "/key/generate", `{"team_id":"ta","user_id":"ma"}`)["key"].(string)
		keyB := c.must(m, "POST", "/key/generate", `{"team_id":"tb","user_id":"mb"}`)["key"].(string)
		oa := c.must(m, "POST", "/key/generate", `{"user_id":"oa"}`)["key"].(string)

		for _, r := range []struct{ method, path, body string }{
			{"POST", "/team/new", `{"team_id":"ta2","organization_id":"A","max_budget":5}`},
			{"POST", "/team/update", `{"team_id":"ta","team_alias":"renamed","max_budget":10}`},
			{"POST", "/team/member_add", `{"team_id":"ta","member":{"user_id":"ma2","role":"user"}}`},
			{"POST", "/team/block", `{"team_id":"ta2"}`},
			{"POST", "/organization/member_add", `{"organization_id":"A","member":{"user_id":"ma3","role":"internal_user"}}`},
			{"PATCH", "/organization/member_update", `{"organization_id":"A","user_id":"ma","max_budget_in_organization":2}`},
			{"POST", "/key/generate", `{"team_id":"ta","user_id":"ma"}`},
			{"POST", "/key/block", `{"key":"` + keyA + `"}`},
			{"GET", "/key/info?key=" + keyA, ""},
			{"GET", "/team/info?team_id=ta", ""},
			{"GET", "/organization/info?organization_id=A", ""},
			{"POST", "/team/delete", `{"team_ids":["ta2"]}`},
		} {
			c.must(oa, r.method, r.path, r.body)
		}
		if l := c.list(oa, "GET", "/organization/list", ""); len(l) != 1 || l[0]["organization_id"] != "A" {
			t.Errorf("the org admin's /organization/list = %v", l)
		}
		if l := c.list(oa, "GET", "/team/list", ""); len(l) != 1 || l[0]["team_id"] != "ta" {
			t.Errorf("the org admin's /team/list = %v", l)
		}
		for _, r := range []struct{ name, method, path, body string }{
			{"team of no organization", "POST", "/team/new", `{"team_id":"tn"}`},
			{"team in B", "POST", "/team/new", `{"team_id":"tn","organization_id":"B"}`},
			{"update B's team", "POST", "/team/update", `{"team_id":"tb","team_alias":"x"}`},
			{"move its team to B", "POST", "/team/update", `{"team_id":"ta","organization_id":"B"}`},
			{"move its team out", "POST", "/team/update", `{"team_id":"ta","organization_id":null}`},
			{"delete B's team", "POST", "/team/delete", `{"team_ids":["tb"]}`},
			{"block B's team", "POST", "/team/block", `{"team_id":"tb"}`},
			{"add to B's team", "POST", "/team/member_add", `{"team_id":"tb","member":{"user_id":"x","role":"user"}}`},
			{"add to B", "POST", "/organization/member_add", `{"organization_id":"B","member":{"user_id":"x","role":"internal_user"}}`},
			{"change B's member", "PATCH", "/organization/member_update", `{"organization_id":"B","user_id":"mb","max_budget_in_organization":100}`},
			{"remove B's member", "DELETE", "/organization/member_delete", `{"organization_id":"B","user_id":"mb"}`},
			{"raise its own budget", "PATCH", "/organization/member_update", `{"organization_id":"A","user_id":"oa","max_budget_in_organization":100}`},
			{"leave", "DELETE", "/organization/member_delete", `{"organization_id":"A","user_id":"oa"}`},
			{"raise A's budget", "PATCH", "/organization/update", `{"organization_id":"A","max_budget":1000}`},
			{"create an organization", "POST", "/organization/new", `{"organization_id":"C"}`},
			{"delete an organization", "DELETE", "/organization/delete", `{"organization_ids":["B"]}`},
			{"key of B's team", "POST", "/key/generate", `{"team_id":"tb","user_id":"mb"}`},
			{"block B's key", "POST", "/key/block", `{"key":"` + keyB + `"}`},
			{"read B's key", "GET", "/key/info?key=" + keyB, ""},
			{"regenerate B's key", "POST", "/key/regenerate", `{"key":"` + keyB + `"}`},
			{"read B's team", "GET", "/team/info?team_id=tb", ""},
			{"read B", "GET", "/organization/info?organization_id=B", ""},
			{"B's spend", "GET", "/team/daily/activity?team_ids=tb", ""},
			{"proxy-wide users", "POST", "/user/update", `{"user_id":"mb","max_budget":100}`},
		} {
			t.Run(r.name, func(t *testing.T) { forbiddenCall(client{t, c.h}, oa, r.method, r.path, r.body) })
		}
		// None of the refused writes landed.
		if tb := c.must(m, "GET", "/team/info?team_id=tb", "")["team_info"].(map[string]any); tb["team_alias"] != nil || tb["organization_id"] != "B" {
			t.Errorf("team tb changed: %v", tb)
		}
		if ta := c.must(m, "GET", "/team/info?team_id=ta", "")["team_info"].(map[string]any); ta["organization_id"] != "A" {
			t.Errorf("team ta left A: %v", ta)
		}
		if a := c.must(m, "GET", "/organization/info?organization_id=A", ""); a["litellm_budget_table"].(map[string]any)["max_budget"] != 10.0 {
			t.Errorf("A's budget changed: %v", a["litellm_budget_table"])
		}
	})
}
