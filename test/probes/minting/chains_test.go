package minting

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
)

const (
	get   = http.MethodGet
	post  = http.MethodPost
	patch = http.MethodPatch
	del   = http.MethodDelete
)

// Chain 1 (issue 29): the admin of team t1 adds user x, a member of team
// t2, to t1 (allowed), mints a key for x in t1 (allowed), and with that
// key, which carries x's identity, tries to create a key in t2, spend on
// t2 and read t2 and x's other keys. Every step past t1 is refused and
// writes nothing.
func TestTeamAdminMintsForAnotherTeamsMember(t *testing.T) {
	stores(t, func(t *testing.T, p *probe) {
		// Set up by the proxy admin: teams t1, t2 (budgets), users a (t1's
		// admin) and x (t2's member), a key of a's, and x's own key in t2.
		for _, team := range []string{"t1", "t2"} {
			p.ok("team/new", post, "/team/new", master, fmt.Sprintf(`{"team_id":%q,"max_budget":100}`, team))
		}
		for _, u := range []string{"a", "x"} {
			p.ok("user/new", post, "/user/new", master, fmt.Sprintf(`{"user_id":%q,"auto_create_key":false,"max_budget":100}`, u))
		}
		p.ok("member_add a", post, "/team/member_add", master, `{"team_id":"t1","member":{"user_id":"a","role":"admin"}}`)
		p.ok("member_add x", post, "/team/member_add", master, `{"team_id":"t2","member":{"user_id":"x","role":"user"}}`)
		keyA := p.ok("a's key", post, "/key/generate", master, `{"user_id":"a","team_id":"t1"}`).str("key")
		own := p.ok("x's own key in t2", post, "/key/generate", master, `{"user_id":"x","team_id":"t2"}`)
		ownHash := own.str("token_id")
		gone := p.ok("x's deleted key in t2", post, "/key/generate", master, `{"user_id":"x","team_id":"t2"}`).str("token_id")
		p.ok("delete it", post, "/key/delete", master, fmt.Sprintf(`{"keys":[%q]}`, gone))
		t2Keys := p.keysOf("t2")

		// Step 1: a adds x to t1 (allowed, LiteLLM's behaviour), recorded
		// with who added whom and when.
		p.ok("a adds x to t1", post, "/team/member_add", keyA, `{"team_id":"t1","member":{"user_id":"x","role":"user"}}`)
		info := p.ok("x's user info", get, "/user/info?user_id=x", master, "")
		if !addedBy(info, "t1", "a") {
			t.Errorf("x's /user/info does not show that a added x to t1: %s", info.body)
		}
		// Step 2: a mints a key for x in t1 (allowed): bound to t1, by a.
		minted := p.ok("a mints a key for x in t1", post, "/key/generate", keyA, `{"user_id":"x","team_id":"t1"}`)
		keyX := minted.str("key")
		if got := p.ok("key/info of the minted key", get, "/key/info", keyX, ""); got.str("info", "bound_to", "team_id") != "t1" || got.str("info", "bound_to", "bound_by") != "a" {
			t.Errorf("the minted key's /key/info does not show it bound to t1 by a: %s", got.body)
		}
		// Within t1 the key works: a request bills t1.
		if a := p.chat(keyX); a.code != http.StatusOK {
			t.Fatalf("a request with the minted key in t1 = %d %s", a.code, a.body)
		}
		t1Spend := p.spendOf("/team/info?team_id=t1")
		if t1Spend <= 0 {
			t.Errorf("t1's spend = %v after the minted key's request, want > 0", t1Spend)
		}

		hideT2 := []string{`"t2"`, ownHash, gone}
		// Step 3: the minted key creates a key in t2 (as x, a member of t2).
		p.refused("key in t2", post, "/key/generate", keyX, `{"team_id":"t2"}`, hideT2...)
		p.refused("key in t2 for x", post, "/key/generate", keyX, `{"team_id":"t2","user_id":"x"}`, hideT2...)
		p.refused("key of no team for x", post, "/key/generate", keyX, `{"user_id":"x"}`, hideT2...)
		// ... or takes, changes or removes x's own key in t2.
		p.refused("regenerate x's t2 key", post, "/key/regenerate", keyX, fmt.Sprintf(`{"key":%q}`, ownHash), hideT2...)
		p.refused("regenerate x's t2 key by path", post, "/key/"+ownHash+"/regenerate", keyX, "", hideT2...)
		p.refused("update x's t2 key", post, "/key/update", keyX, fmt.Sprintf(`{"key":%q,"max_budget":99}`, ownHash), hideT2...)
		p.refused("delete x's t2 key", post, "/key/delete", keyX, fmt.Sprintf(`{"keys":[%q]}`, ownHash), hideT2...)
		p.refused("block x's t2 key", post, "/key/block", keyX, fmt.Sprintf(`{"key":%q}`, ownHash), hideT2...)
		// ... or moves itself to t2.
		p.refused("move the minted key to t2", post, "/key/update", keyX, fmt.Sprintf(`{"key":%q,"team_id":"t2"}`, minted.str("token_id")), hideT2...)
		// Step 4: the minted key reads t2 and x's t2 key.
		p.refused("team/info of t2", get, "/team/info?team_id=t2", keyX, "", ownHash)
		p.refused("key/info of x's t2 key", get, "/key/info?key="+ownHash, keyX, "", `"t2"`)
		p.refused("key/list of t2", get, "/key/list?team_id=t2", keyX, "", hideT2...)
		p.refused("spend logs of t2", get, "/spend/logs?team_id=t2", keyX, "", hideT2...)
		p.refused("daily activity of t2", get, "/team/daily/activity?team_ids=t2", keyX, "", hideT2...)
		// Lists and x's /user/info answer, within t1 only.
		for _, path := range []string{"/user/info", "/user/info?user_id=x", "/key/list", "/key/list?user_id=x", "/key/list?status=deleted", "/team/list", "/spend/logs", "/user/daily/activity"} {
			p.hidden(path, p.ok(path, get, path, keyX, ""), hideT2...)
		}
		// Step 5: the gateway: the minted key names t2.
		p.refused("models of t2", get, "/v1/models?team_id=t2", keyX, "", hideT2...)

		// Nothing was written in t2: its keys, its spend, x's own key.
		if got := p.keysOf("t2"); !slices.Equal(got, t2Keys) {
			t.Errorf("t2's keys = %v, want %v (unchanged)", got, t2Keys)
		}
		if s := p.spendOf("/team/info?team_id=t2"); s != 0 {
			t.Errorf("t2's spend = %v, want 0", s)
		}
		if a := p.chat(own.str("key")); a.code != http.StatusOK {
			t.Errorf("x's own t2 key stopped working: %d %s", a.code, a.body)
		}
		// x's own key (made by a proxy admin) still reaches t2.
		p.ok("x's own key reads t2", get, "/team/info?team_id=t2", own.str("key"), "")
	})
}

// Chain 2 (issue 29): the org_admin of organization oa adds organization
// ob's member y to oa and to oa's team ta, mints a key for y there, and
// with it tries to create a key in ob's team tb (y is tb's admin), manage
// tb, bill ob and read tb and ob. Every step past oa is refused and writes
// nothing.
func TestOrgAdminMintsForAnotherOrgsMember(t *testing.T) {
	stores(t, func(t *testing.T, p *probe) {
		for _, o := range []string{"oa", "ob"} {
			p.ok("organization/new", post, "/organization/new", master, fmt.Sprintf(`{"organization_id":%q,"max_budget":100}`, o))
		}
		p.ok("team ta", post, "/team/new", master, `{"team_id":"ta","organization_id":"oa"}`)
		p.ok("team tb", post, "/team/new", master, `{"team_id":"tb","organization_id":"ob"}`)
		p.ok("org admin", post, "/organization/member_add", master, `{"organization_id":"oa","member":{"user_id":"boss","role":"org_admin"}}`)
		p.ok("y in ob", post, "/organization/member_add", master, `{"organization_id":"ob","member":{"user_id":"y","role":"internal_user"}}`)
		p.ok("y admin of tb", post, "/team/member_add", master, `{"team_id":"tb","member":{"user_id":"y","role":"admin"}}`)
		keyBoss := p.ok("boss's key", post, "/key/generate", master, `{"user_id":"boss"}`).str("key")
		own := p.ok("y's own key in tb", post, "/key/generate", master, `{"user_id":"y","team_id":"tb"}`)
		ownHash := own.str("token_id")
		tbKeys := p.keysOf("tb")

		// Steps 1-2: boss adds y to oa and to ta (allowed), recorded.
		p.ok("boss adds y to oa", post, "/organization/member_add", keyBoss, `{"organization_id":"oa","member":{"user_id":"y","role":"internal_user"}}`)
		p.ok("boss adds y to ta", post, "/team/member_add", keyBoss, `{"team_id":"ta","member":{"user_id":"y","role":"user"}}`)
		info := p.ok("y's user info", get, "/user/info?user_id=y", master, "")
		if !addedBy(info, "ta", "boss") || !addedBy(info, "oa", "boss") {
			t.Errorf("y's /user/info does not show that boss added y to oa and ta: %s", info.body)
		}
		// Step 3: boss mints a key for y in ta (allowed): bound to oa.
		minted := p.ok("boss mints a key for y in ta", post, "/key/generate", keyBoss, `{"user_id":"y","team_id":"ta"}`)
		keyY := minted.str("key")
		if got := p.ok("key/info of the minted key", get, "/key/info", keyY, ""); got.str("info", "bound_to", "organization_id") != "oa" || got.str("info", "bound_to", "bound_by") != "boss" {
			t.Errorf("the minted key's /key/info does not show it bound to oa by boss: %s", got.body)
		}
		if a := p.chat(keyY); a.code != http.StatusOK {
			t.Fatalf("a request with the minted key in ta = %d %s", a.code, a.body)
		}
		if s := p.spendOf("/organization/info?organization_id=oa"); s <= 0 {
			t.Errorf("oa's spend = %v after the minted key's request, want > 0", s)
		}

		hideB := []string{`"ob"`, `"tb"`, ownHash}
		// Step 4: a key in ob's team tb, and tb's management (y is its admin).
		p.refused("key in tb", post, "/key/generate", keyY, `{"team_id":"tb"}`, hideB...)
		p.refused("key in tb for y", post, "/key/generate", keyY, `{"team_id":"tb","user_id":"y"}`, hideB...)
		p.refused("regenerate y's tb key", post, "/key/regenerate", keyY, fmt.Sprintf(`{"key":%q}`, ownHash), hideB...)
		p.refused("unblock y's tb key", post, "/key/unblock", keyY, fmt.Sprintf(`{"key":%q}`, ownHash), hideB...)
		p.refused("member_add to tb", post, "/team/member_add", keyY, `{"team_id":"tb","member":{"user_id":"z","role":"admin"}}`, hideB...)
		p.refused("team/update tb", post, "/team/update", keyY, `{"team_id":"tb","max_budget":1000}`, hideB...)
		p.refused("move ta to ob", post, "/team/update", keyY, `{"team_id":"ta","organization_id":"ob"}`, hideB...)
		// Step 5: reads of tb and ob.
		p.refused("team/info of tb", get, "/team/info?team_id=tb", keyY, "", ownHash)
		p.refused("organization/info of ob", get, "/organization/info?organization_id=ob", keyY, "", ownHash, `"tb"`)
		p.refused("organization/info of ob by body", post, "/organization/info", keyY, `{"organizations":["ob"]}`, ownHash, `"tb"`)
		p.refused("spend logs of ob", get, "/spend/logs?organization_id=ob", keyY, "", hideB...)
		p.refused("daily activity of ob", get, "/organization/daily/activity?organization_ids=ob", keyY, "", hideB...)
		p.refused("daily activity of tb", get, "/team/daily/activity?team_ids=tb", keyY, "", hideB...)
		for _, path := range []string{"/user/info", "/key/list", "/team/list", "/organization/list", "/spend/logs"} {
			p.hidden(path, p.ok(path, get, path, keyY, ""), hideB...)
		}
		// Step 6: the gateway: the minted key names tb.
		p.refused("models of tb", get, "/v1/models?team_id=tb", keyY, "", hideB...)

		// Nothing was written in ob: tb's keys and members, ob's spend.
		if got := p.keysOf("tb"); !slices.Equal(got, tbKeys) {
			t.Errorf("tb's keys = %v, want %v (unchanged)", got, tbKeys)
		}
		if a := p.do(get, "/user/info?user_id=z", master, ""); a.code != http.StatusNotFound {
			t.Errorf("user z, refused as a member of tb, exists: %d %s", a.code, a.body)
		}
		if s := p.spendOf("/organization/info?organization_id=ob"); s != 0 {
			t.Errorf("ob's spend = %v, want 0", s)
		}
		if s := p.spendOf("/team/info?team_id=tb"); s != 0 {
			t.Errorf("tb's spend = %v, want 0", s)
		}
		tb := p.ok("tb", get, "/team/info?team_id=tb", master, "")
		if n := len(tb.json["team_info"].(map[string]any)["members_with_roles"].([]any)); n != 1 {
			t.Errorf("tb has %d members, want 1 (y): %s", n, tb.body)
		}
		// y's own key (made by a proxy admin) still reaches ob.
		p.ok("y's own key reads ob", get, "/organization/info?organization_id=ob", own.str("key"), "")
	})
}

// addedBy reports whether a /user/info answer shows the user's membership
// of group (a team or an organization) added by who, with a time.
func addedBy(a answer, group, who string) bool {
	info, _ := a.json["user_info"].(map[string]any)
	list, _ := info["memberships"].([]any)
	for _, m := range list {
		m, _ := m.(map[string]any)
		if (m["team_id"] == group || m["organization_id"] == group) && m["added_by"] == who && m["added_at"] != nil {
			return true
		}
	}
	return false
}

// The other ways a team admin could hand over a key carrying another
// user's identity, and the ways a bound key could shed its scope: each
// leaves a bound key, or is refused.
func TestBoundKeysStayBound(t *testing.T) {
	stores(t, func(t *testing.T, p *probe) {
		for _, team := range []string{"t1", "t2"} {
			p.ok("team/new", post, "/team/new", master, fmt.Sprintf(`{"team_id":%q}`, team))
		}
		p.ok("user a", post, "/user/new", master, `{"user_id":"a","auto_create_key":false}`)
		p.ok("user x", post, "/user/new", master, `{"user_id":"x","auto_create_key":false}`)
		p.ok("a admin of t1", post, "/team/member_add", master, `{"team_id":"t1","member":{"user_id":"a","role":"admin"}}`)
		p.ok("x in t1", post, "/team/member_add", master, `{"team_id":"t1","member":{"user_id":"x","role":"user"}}`)
		p.ok("x in t2", post, "/team/member_add", master, `{"team_id":"t2","member":{"user_id":"x","role":"admin"}}`)
		keyA := p.ok("a's key", post, "/key/generate", master, `{"user_id":"a","team_id":"t1"}`).str("key")
		boundTo := func(step, secret string) {
			t.Helper()
			if got := p.ok(step, get, "/key/info", secret, ""); got.str("info", "bound_to", "team_id") != "t1" || got.str("info", "bound_to", "bound_by") != "a" {
				t.Errorf("%s: not bound to t1 by a: %s", step, got.body)
			}
			p.refused(step+": key in t2", post, "/key/generate", secret, `{"team_id":"t2"}`)
			p.refused(step+": t2's members", post, "/team/member_add", secret, `{"team_id":"t2","member":{"user_id":"w"}}`)
		}

		// a regenerates x's own key in t1: a now holds its secret, so it is bound.
		xOwn := p.ok("x's own t1 key", post, "/key/generate", master, `{"user_id":"x","team_id":"t1"}`)
		boundTo("regenerated by a", p.ok("a regenerates x's key", post, "/key/regenerate", keyA, fmt.Sprintf(`{"key":%q}`, xOwn.str("token_id"))).str("key"))
		// a gives its own key to x.
		mine := p.ok("a's second key", post, "/key/generate", keyA, `{"team_id":"t1"}`)
		if got := p.ok("a's own key", get, "/key/info", mine.str("key"), ""); got.json["info"].(map[string]any)["bound_to"] != nil {
			t.Errorf("a's own key is bound: %s", got.body)
		}
		p.ok("a gives its key to x", post, "/key/update", keyA, fmt.Sprintf(`{"key":%q,"user_id":"x"}`, mine.str("token_id")))
		boundTo("given to x", mine.str("key"))
		// a key a bound key makes is bound too, even the user's "own".
		minted := p.ok("a mints for x", post, "/key/generate", keyA, `{"user_id":"x","team_id":"t1"}`).str("key")
		boundTo("made by the bound key", p.ok("bound key makes one", post, "/key/generate", minted, `{"team_id":"t1"}`).str("key"))
		// x promoted to proxy_admin does not promote the key a holds.
		p.ok("x promoted", post, "/user/update", master, `{"user_id":"x","user_role":"proxy_admin"}`)
		p.refused("promoted: user/list", get, "/user/list", minted, "")
		p.refused("promoted: team/new", post, "/team/new", minted, `{"team_id":"t3"}`)
		if a := p.do(get, "/team/info?team_id=t3", master, ""); a.code != http.StatusNotFound {
			t.Errorf("team t3 exists: %d %s", a.code, a.body)
		}
		// a proxy admin's key for x is not bound: x's rights elsewhere.
		adminMade := p.ok("proxy admin's key for x", post, "/key/generate", master, `{"user_id":"x","team_id":"t1"}`).str("key")
		p.ok("x's proxy-admin-made key reads t2", get, "/team/info?team_id=t2", adminMade, "")
	})
}
