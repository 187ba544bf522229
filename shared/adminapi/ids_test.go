package adminapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// hostileIDs are ids that would make two records' DynamoDB keys the same
// string (the separator "#": member#<team>#<user>), or that no key can
// hold (a control character, over 256 bytes).
var hostileIDs = map[string]string{
	"separator":    "q#r",
	"control char": "q\x01r",
	"300 bytes":    strings.Repeat("x", 300),
}

// TestHostileIDs sends each hostile id to every admin route that builds a
// record's key from it: each is a 400 naming the field, on both stores.
func TestHostileIDs(t *testing.T) {
	onStores(t, func(t *testing.T, c client) {
		const m = "sk-master-test"
		c.must(m, "POST", "/team/new", `{"team_id":"p"}`)
		c.must(m, "POST", "/user/new", `{"user_id":"u","auto_create_key":false}`)
		secret := c.must(m, "POST", "/key/generate", `{"team_id":"p"}`)["key"].(string)
		for name, id := range hostileIDs {
			j, _ := json.Marshal(id)
			v, q := string(j), url.QueryEscape(id)
			routes := []struct{ method, path, body, param string }{
				{"POST", "/key/generate", `{"key_alias":` + v + `}`, "key_alias"},
				{"POST", "/key/generate", `{"team_id":` + v + `}`, "team_id"},
				{"POST", "/key/generate", `{"user_id":` + v + `}`, "user_id"},
				{"POST", "/key/update", `{"key":"` + secret + `","key_alias":` + v + `}`, "key_alias"},
				{"POST", "/key/delete", `{"key_aliases":[` + v + `]}`, "key_aliases"},
				{"POST", "/team/new", `{"team_id":` + v + `}`, "team_id"},
				{"POST", "/team/update", `{"team_id":` + v + `,"max_budget":1}`, "team_id"},
				{"POST", "/team/delete", `{"team_ids":[` + v + `]}`, "team_ids"},
				{"POST", "/team/block", `{"team_id":` + v + `}`, "team_id"},
				{"POST", "/team/member_add", `{"team_id":` + v + `,"member":{"user_id":"u"}}`, "team_id"},
				{"POST", "/team/member_add", `{"team_id":"p","member":{"user_id":` + v + `}}`, "member"},
				{"POST", "/team/member_update", `{"team_id":"p","user_id":` + v + `,"max_budget_in_team":1}`, "user_id"},
				{"POST", "/team/member_delete", `{"team_id":"p","user_id":` + v + `}`, "user_id"},
				{"GET", "/team/info?team_id=" + q, "", "team_id"},
				{"POST", "/user/new", `{"user_id":` + v + `}`, "user_id"},
				{"POST", "/user/new", `{"user_id":"v","teams":[` + v + `]}`, "teams"},
				{"POST", "/user/update", `{"user_id":` + v + `,"max_budget":1}`, "user_id"},
				{"POST", "/user/delete", `{"user_ids":[` + v + `]}`, "user_ids"},
				{"GET", "/user/info?user_id=" + q, "", "user_id"},
				{"POST", "/customer/new", `{"user_id":` + v + `}`, "user_id"},
				{"POST", "/customer/update", `{"user_id":` + v + `,"max_budget":1}`, "user_id"},
				{"POST", "/customer/delete", `{"user_ids":[` + v + `]}`, "user_ids"},
				{"POST", "/customer/block", `{"user_ids":[` + v + `]}`, "user_ids"},
				{"GET", "/customer/info?end_user_id=" + q, "", "end_user_id"},
			}
			for _, r := range routes {
				t.Run(fmt.Sprintf("%s %s %s %s", name, r.method, r.path, r.param), func(t *testing.T) {
					c := client{t, c.h}
					badField(c, r.method, r.path, r.body, r.param)
				})
			}
		}
	})
}

// TestMemberSeparator is the repro: the admin of team p updating
// its member "q#r" must not reach user r's membership of team p#q.
func TestMemberSeparator(t *testing.T) {
	onStores(t, func(t *testing.T, c client) {
		const m = "sk-master-test"
		c.must(m, "POST", "/team/new", `{"team_id":"p"}`)
		// No team can be named p#q; were it, r's membership is its own.
		badField(c, "POST", "/team/new", `{"team_id":"p#q"}`, "team_id")
		badField(c, "POST", "/team/member_add", `{"team_id":"p#q","member":{"user_id":"r","role":"user"},"max_budget_in_team":0.01}`, "team_id")
		badField(c, "POST", "/team/member_update", `{"team_id":"p","user_id":"q#r","max_budget_in_team":1000,"role":"admin"}`, "user_id")
	})
}

// TestOversizedFields: fields past their bound are a 400 naming the
// field, never a 500 or a 503, on both stores.
func TestOversizedFields(t *testing.T) {
	big := `{"k":"` + strings.Repeat("x", 500<<10) + `"}`
	list := func(n, size int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("%0*d", size, i)
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	onStores(t, func(t *testing.T, c client) {
		const m = "sk-master-test"
		c.must(m, "POST", "/team/new", `{"team_id":"p"}`)
		c.must(m, "POST", "/user/new", `{"user_id":"u","auto_create_key":false}`)
		secret := c.must(m, "POST", "/key/generate", `{}`)["key"].(string)
		for _, r := range []struct{ path, body, param string }{
			{"/key/generate", `{"metadata":` + big + `}`, "metadata"},
			{"/key/generate", `{"key_alias":"` + strings.Repeat("a", 300<<10) + `"}`, "key_alias"},
			{"/key/update", `{"key":"` + secret + `","metadata":` + big + `}`, "metadata"},
			{"/key/generate", `{"tags":` + list(65, 1) + `}`, "tags"},
			{"/key/generate", `{"tags":["` + strings.Repeat("t", 257) + `"]}`, "tags"},
			{"/key/generate", `{"models":` + list(257, 3) + `}`, "models"},
			{"/key/generate", `{"models":["` + strings.Repeat("m", 257) + `"]}`, "models"},
			{"/team/new", `{"team_id":"big","metadata":` + big + `}`, "metadata"},
			{"/team/new", `{"team_id":"big","team_alias":"` + strings.Repeat("a", 300) + `"}`, "team_alias"},
			{"/team/update", `{"team_id":"p","metadata":` + big + `}`, "metadata"},
			{"/user/new", `{"user_id":"big","metadata":` + big + `}`, "metadata"},
			{"/user/update", `{"user_id":"u","user_alias":"` + strings.Repeat("a", 300) + `"}`, "user_alias"},
			{"/customer/new", `{"user_id":"big","alias":"` + strings.Repeat("a", 300) + `"}`, "alias"},
		} {
			t.Run(r.path+" "+r.param, func(t *testing.T) {
				c := client{t, c.h}
				badField(c, "POST", r.path, r.body, r.param)
			})
		}
	})
}

// badField asserts that the master key's call is a 400 naming param, in
// LiteLLM's error shape; messages are cut short (bodies are large here).
func badField(c client, method, path, body, param string) {
	c.t.Helper()
	code, m, raw := c.call("sk-master-test", method, path, body)
	e, _ := m["error"].(map[string]any)
	if code != 400 || e == nil || e["param"] != param || e["type"] != "invalid_request_error" {
		c.t.Errorf("%s %s %s: status %d body %s; want 400 naming %q", method, path, cut(body), code, cut(raw), param)
	}
}

func cut(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
