package adminapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/adminapi"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/spend"
)

// Roles of the authorization matrix: the master key, a key of a user of
// each role, a team admin (an internal user who is admin of team t1), an
// org admin (an internal user who is org_admin of organization o1, which
// team t1 is in; t2 is in o2, o3 has no team), and a key that belongs to
// no user.
var roles = []string{"master", "proxy_admin", "proxy_admin_viewer", "internal_user", "internal_user_viewer", "team_admin", "org_admin", "key_only"}

// fixture is the state every matrix cell starts from.
type fixture struct {
	h       http.Handler
	secrets map[string]string // role -> its key's secret
	own     string            // secret of internal_user's key in team t1
}

const masterKey = "sk-master-test"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	ks := keys.NewMemory()
	cat := newCatalog(t, catalogBase)
	if err := cat.Store.Create(ctx, models.Record{ID: "m1", ModelName: "stored", Params: map[string]any{"model": "openai/gpt-4o"}}); err != nil {
		t.Fatal(err)
	}
	if err := cat.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	h := adminapi.New(adminapi.Options{MasterKey: masterKey, Keys: ks, Spend: spend.NewMemory(ks), Config: config.Default(), Models: cat})
	fx := &fixture{h: h, secrets: map[string]string{"master": masterKey}}
	users := map[string]keys.UserRole{
		"proxy_admin": keys.RoleProxyAdmin, "proxy_admin_viewer": keys.RoleProxyAdminViewer,
		"internal_user": keys.RoleInternalUser, "internal_user_viewer": keys.RoleInternalUserViewer,
		"team_admin": keys.RoleInternalUser, "other": keys.RoleInternalUser, "org_admin": keys.RoleInternalUser,
	}
	for id, role := range users {
		if err := ks.Users().Create(ctx, keys.User{ID: id, Role: role}); err != nil {
			t.Fatal(err)
		}
	}
	for _, org := range []string{"o1", "o2", "o3"} {
		if err := ks.Organizations().Create(ctx, keys.Organization{ID: org}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []keys.Member{{Group: keys.KindOrg, GroupID: "o1", UserID: "org_admin", Role: keys.OrgAdmin}, {Group: keys.KindOrg, GroupID: "o1", UserID: "internal_user", Role: keys.OrgInternalUser}} {
		if err := ks.AddMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for team, org := range map[string]string{"t1": "o1", "t2": "o2"} {
		if err := ks.Teams().Create(ctx, keys.Team{ID: team, OrganizationID: org}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []keys.Member{{Group: keys.KindTeam, GroupID: "t1", UserID: "team_admin", Role: keys.MemberAdmin}, {Group: keys.KindTeam, GroupID: "t1", UserID: "internal_user", Role: keys.MemberUser}} {
		if err := ks.AddMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(secret, user, team string) {
		if err := ks.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secret), UserID: user, TeamID: team}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range roles[1:] {
		secret := "sk-role-" + r
		user := r
		if r == "key_only" {
			user = ""
		}
		mk(secret, user, "")
		fx.secrets[r] = secret
	}
	fx.own = "sk-own-internal-key"
	mk(fx.own, "internal_user", "t1")
	mk("sk-other-key", "other", "")
	if err := ks.EndUsers().Create(ctx, keys.EndUser{ID: "cust"}); err != nil {
		t.Fatal(err)
	}
	if err := ks.Budgets().Create(ctx, keys.BudgetRecord{ID: "b1", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: new(float64)}}}); err != nil {
		t.Fatal(err)
	}
	return fx
}

func (fx *fixture) do(role, method, path, body string) *httptest.ResponseRecorder {
	return gatewaytest.Do(fx.h, gatewaytest.Request(method, path, fx.secrets[role], body))
}

type cell struct {
	method, path, body string
	allowed            []string
}

var (
	admins  = []string{"master", "proxy_admin"}
	readers = []string{"master", "proxy_admin", "proxy_admin_viewer"}
)

func plus(a []string, b ...string) []string { return append(slices.Clone(a), b...) }

// matrix is every management route with a request and the roles allowed
// to make it; every other role must get a 403.
var matrix = map[string]cell{
	"POST /key/generate":            {body: `{}`, allowed: plus(admins, "internal_user", "team_admin", "org_admin")},
	"POST /key/update":              {body: `{"key":"sk-own-internal-key","metadata":{"a":1}}`, allowed: plus(admins, "internal_user", "team_admin", "org_admin")},
	"POST /key/delete":              {body: `{"keys":["sk-own-internal-key"]}`, allowed: plus(admins, "internal_user", "team_admin", "org_admin")},
	"POST /key/block":               {body: `{"key":"sk-own-internal-key"}`, allowed: plus(admins, "team_admin", "org_admin")},
	"POST /key/unblock":             {body: `{"key":"sk-own-internal-key"}`, allowed: plus(admins, "team_admin", "org_admin")},
	"POST /key/regenerate":          {body: `{"key":"sk-own-internal-key"}`, allowed: plus(admins, "internal_user", "team_admin", "org_admin")},
	"POST /key/{key}/regenerate":    {path: "/key/sk-own-internal-key/regenerate", allowed: plus(admins, "internal_user", "team_admin", "org_admin")},
	"GET /key/info":                 {path: "/key/info?key=sk-own-internal-key", allowed: plus(readers, "internal_user", "team_admin", "org_admin")},
	"GET /key/list":                 {allowed: plus(readers, "internal_user", "internal_user_viewer", "team_admin", "org_admin")},
	"POST /team/new":                {body: `{"team_id":"t9"}`, allowed: admins},
	"POST /team/update":             {body: `{"team_id":"t1","team_alias":"x"}`, allowed: plus(admins, "org_admin")},
	"POST /team/delete":             {body: `{"team_ids":["t2"]}`, allowed: admins},
	"POST /team/member_add":         {body: `{"team_id":"t1","member":{"role":"user","user_id":"newbie"}}`, allowed: plus(admins, "team_admin", "org_admin")},
	"POST /team/member_update":      {body: `{"team_id":"t1","user_id":"internal_user","role":"user"}`, allowed: plus(admins, "team_admin", "org_admin")},
	"POST /team/member_delete":      {body: `{"team_id":"t1","user_id":"internal_user"}`, allowed: plus(admins, "team_admin", "org_admin")},
	"POST /team/block":              {body: `{"team_id":"t2"}`, allowed: admins},
	"POST /team/unblock":            {body: `{"team_id":"t2"}`, allowed: admins},
	"POST /team/{team_id}/callback": {path: "/team/t1/callback", body: `{"callback_name":"langfuse","callback_type":"success","callback_vars":{"langfuse_public_key":"pk","langfuse_secret_key":"sk"}}`, allowed: plus(admins, "team_admin", "org_admin")},
	"GET /team/{team_id}/callback":  {path: "/team/t1/callback", allowed: plus(admins, "team_admin", "org_admin")},
	"GET /active/callbacks":         {allowed: admins},
	"GET /team/info":                {path: "/team/info?team_id=t1", allowed: plus(readers, "internal_user", "team_admin", "org_admin")},
	"GET /team/list":                {allowed: plus(readers, "internal_user", "internal_user_viewer", "team_admin", "org_admin")},
	"POST /user/new":                {body: `{"user_id":"new-user"}`, allowed: admins},
	"POST /user/update":             {body: `{"user_id":"internal_user","user_alias":"x"}`, allowed: admins},
	"POST /user/delete":             {body: `{"user_ids":["other"]}`, allowed: admins},
	"GET /user/info":                {path: "/user/info?user_id=internal_user", allowed: plus(readers, "internal_user")},
	"GET /user/list":                {allowed: readers},
	"POST /customer/new":            {body: `{"user_id":"cust2"}`, allowed: admins},
	"POST /customer/update":         {body: `{"user_id":"cust","alias":"x"}`, allowed: admins},
	"POST /customer/delete":         {body: `{"user_ids":["cust"]}`, allowed: admins},
	"POST /customer/block":          {body: `{"user_ids":["cust"]}`, allowed: admins},
	"POST /customer/unblock":        {body: `{"user_ids":["cust"]}`, allowed: admins},
	"GET /customer/info":            {path: "/customer/info?end_user_id=cust", allowed: readers},
	"GET /customer/list":            {allowed: readers},
	"GET /spend/logs":               {allowed: plus(readers, "internal_user", "internal_user_viewer", "team_admin", "org_admin")},
	"GET /global/spend/report":      {allowed: readers},
	"GET /user/daily/activity":      {allowed: plus(readers, "internal_user", "internal_user_viewer", "team_admin", "org_admin")},
	"GET /team/daily/activity":      {path: "/team/daily/activity?team_ids=t1", allowed: plus(readers, "team_admin", "org_admin")},

	"GET /organization/daily/activity": {path: "/organization/daily/activity?organization_ids=o1", allowed: plus(readers, "org_admin")},

	"POST /organization/new":             {body: `{"organization_alias":"x"}`, allowed: admins},
	"PATCH /organization/update":         {body: `{"organization_id":"o1","organization_alias":"x"}`, allowed: admins},
	"DELETE /organization/delete":        {body: `{"organization_ids":["o3"]}`, allowed: admins},
	"GET /organization/info":             {path: "/organization/info?organization_id=o1", allowed: plus(readers, "internal_user", "org_admin")},
	"POST /organization/info":            {body: `{"organizations":["o1"]}`, allowed: plus(readers, "internal_user", "org_admin")},
	"GET /organization/list":             {allowed: plus(readers, "internal_user", "internal_user_viewer", "team_admin", "org_admin")},
	"POST /organization/member_add":      {body: `{"organization_id":"o1","member":{"user_id":"newbie","role":"internal_user"}}`, allowed: plus(admins, "org_admin")},
	"PATCH /organization/member_update":  {body: `{"organization_id":"o1","user_id":"internal_user","role":"internal_user_viewer"}`, allowed: plus(admins, "org_admin")},
	"DELETE /organization/member_delete": {body: `{"organization_id":"o1","user_id":"internal_user"}`, allowed: plus(admins, "org_admin")},
	"GET /model/info":                    {allowed: roles},
	"GET /v1/model/info":                 {allowed: roles},
	"GET /v2/model/info":                 {allowed: roles},
	"POST /model/new":                    {body: `{"model_name":"m","litellm_params":{"model":"openai/gpt-4o","api_key":"sk-x"}}`, allowed: admins},
	"POST /model/update":                 {body: `{"model_info":{"id":"m1"},"litellm_params":{"rpm":5}}`, allowed: admins},
	"PATCH /model/{id}/update":           {path: "/model/m1/update", body: `{"litellm_params":{"rpm":5}}`, allowed: admins},
	"POST /model/delete":                 {body: `{"id":"m1"}`, allowed: admins},
	"POST /budget/new":                   {body: `{"budget_id":"b9","max_budget":1}`, allowed: admins},
	"POST /budget/update":                {body: `{"budget_id":"b1","max_budget":2}`, allowed: admins},
	"POST /budget/info":                  {body: `{"budgets":["b1"]}`, allowed: readers},
	"GET /budget/list":                   {allowed: readers},
	"POST /budget/delete":                {body: `{"id":"b1"}`, allowed: admins},
	"GET /budget/settings":               {path: "/budget/settings?budget_id=b1", allowed: readers},
}

// TestAuthorizationMatrix calls every route as every role, each on fresh
// state: allowed cells succeed, every denied cell is a 403 permission error.
func TestAuthorizationMatrix(t *testing.T) {
	var names []string
	for name := range matrix {
		names = append(names, name)
	}
	slices.Sort(names)
	routes := adminapi.Routes()
	slices.Sort(routes)
	if !slices.Equal(names, routes) {
		t.Fatalf("the matrix covers\n%v\nthe API has\n%v", names, routes)
	}
	for _, name := range names {
		c := matrix[name]
		method, path, _ := strings.Cut(name, " ")
		if c.path != "" {
			path = c.path
		}
		for _, role := range roles {
			t.Run(fmt.Sprintf("%s/%s", name, role), func(t *testing.T) {
				fx := newFixture(t)
				w := fx.do(role, method, path, c.body)
				allowed := slices.Contains(c.allowed, role)
				if allowed {
					if w.Code != http.StatusOK {
						t.Fatalf("allowed: status %d, body %s", w.Code, w.Body)
					}
					return
				}
				var e struct {
					Error struct{ Type, Message string } `json:"error"`
				}
				_ = json.Unmarshal(w.Body.Bytes(), &e)
				if w.Code != http.StatusForbidden || e.Error.Type != "permission_error" || e.Error.Message == "" {
					t.Fatalf("denied: status %d, body %s; want 403 permission_error", w.Code, w.Body)
				}
			})
		}
	}
}

// An internal user may not create keys for another user, nor above its
// own limits; a team admin may not give its team's keys to non-members.
func TestInternalUserLimits(t *testing.T) {
	fx := newFixture(t)
	ks := fx.h.(*adminapi.Handler)
	_ = ks
	for _, tt := range []struct {
		role, body string
		status     int
	}{
		{"internal_user", `{"user_id":"other"}`, 403},
		{"internal_user", `{"team_id":"t2"}`, 403},
		{"internal_user", `{"team_id":"t1"}`, 200},
		{"team_admin", `{"team_id":"t1","user_id":"internal_user"}`, 200},
		{"team_admin", `{"team_id":"t1","user_id":"other"}`, 403},
		{"internal_user_viewer", `{}`, 403},
	} {
		if w := fx.do(tt.role, "POST", "/key/generate", tt.body); w.Code != tt.status {
			t.Errorf("%s %s: status %d, want %d (%s)", tt.role, tt.body, w.Code, tt.status, w.Body)
		}
	}
	// With limits of its own, the user's keys must stay within them.
	w := fx.do("master", "POST", "/user/update", `{"user_id":"internal_user","max_budget":5,"rpm_limit":10,"models":["gpt-4o-mini"]}`)
	if w.Code != 200 {
		t.Fatal(w.Body)
	}
	for _, tt := range []struct {
		body   string
		status int
	}{
		{`{"max_budget":6,"rpm_limit":10,"models":["gpt-4o-mini"]}`, 403},
		{`{"max_budget":5,"rpm_limit":11,"models":["gpt-4o-mini"]}`, 403},
		{`{"max_budget":5,"rpm_limit":10,"models":["gpt-4o"]}`, 403},
		{`{"max_budget":5,"rpm_limit":10}`, 403},
		{`{"max_budget":4.5,"rpm_limit":10,"models":["gpt-4o-mini"]}`, 200},
		// No max_budget of its own: the user's budget already bounds every
		// key it owns, as in LiteLLM (issue 20).
		{`{"rpm_limit":10,"models":["gpt-4o-mini"]}`, 200},
	} {
		if w := fx.do("internal_user", "POST", "/key/generate", tt.body); w.Code != tt.status {
			t.Errorf("%s: status %d, want %d (%s)", tt.body, w.Code, tt.status, w.Body)
		}
	}
	// Nor more requests in flight than the user's own max_parallel_requests.
	if w := fx.do("master", "POST", "/user/update", `{"user_id":"internal_user","max_parallel_requests":2}`); w.Code != 200 {
		t.Fatal(w.Body)
	}
	for _, tt := range []struct {
		parallel string
		status   int
	}{{`null`, 403}, {`3`, 403}, {`2`, 200}, {`0`, 200}} {
		body := `{"max_budget":5,"rpm_limit":10,"models":["gpt-4o-mini"],"max_parallel_requests":` + tt.parallel + `}`
		if w := fx.do("internal_user", "POST", "/key/generate", body); w.Code != tt.status {
			t.Errorf("%s: status %d, want %d (%s)", body, w.Code, tt.status, w.Body)
		}
	}
}

// keyInfo is a key's /key/info as the master reads it (the fields tests look at).
type keyInfo struct {
	Blocked bool   `json:"blocked"`
	UserID  string `json:"user_id"`
}

func (fx *fixture) keyInfo(t *testing.T, ref string) keyInfo {
	t.Helper()
	w := fx.do("master", "GET", "/key/info?key="+ref, "")
	if w.Code != http.StatusOK {
		t.Fatalf("key/info %s: %d %s", ref, w.Code, w.Body)
	}
	var out struct {
		Info keyInfo `json:"info"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out.Info
}

// Changing blocked through /key/update or /key/regenerate needs what
// /key/block and /key/unblock need (a proxy admin or an admin of the key's
// team): an internal user may not undo the block an admin put on its key,
// nor move the blocked key into a team it administers (whose admin may
// unblock it).
func TestBlockedNeedsBlockPermission(t *testing.T) {
	const key = "sk-own-internal-key" // internal_user's, in team t1 where it is a plain member
	for _, tt := range []struct{ name, path, body string }{
		{"update unblocks", "/key/update", `{"key":"` + key + `","blocked":false}`},
		{"regenerate unblocks", "/key/regenerate", `{"key":"` + key + `","new_key":"sk-new-internal-key","blocked":false}`},
		{"update moves to its own team", "/key/update", `{"key":"` + key + `","team_id":"t2"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			if w := fx.do("master", "POST", "/team/member_add", `{"team_id":"t2","member":{"user_id":"internal_user","role":"admin"}}`); w.Code != http.StatusOK {
				t.Fatalf("member_add: %d %s", w.Code, w.Body)
			}
			if w := fx.do("master", "POST", "/key/block", `{"key":"`+key+`"}`); w.Code != http.StatusOK {
				t.Fatalf("block: %d %s", w.Code, w.Body)
			}
			if w := fx.do("internal_user", "POST", tt.path, tt.body); w.Code != http.StatusForbidden {
				t.Fatalf("status %d, want 403: %s", w.Code, w.Body)
			}
			if !fx.keyInfo(t, key).Blocked {
				t.Fatal("the key is no longer blocked")
			}
			if w := fx.do("internal_user", "POST", "/key/unblock", `{"key":"`+key+`"}`); w.Code != http.StatusForbidden {
				t.Fatalf("unblock: status %d, want 403: %s", w.Code, w.Body)
			}
		})
	}

	// An internal user may not block its own key through update either
	// (as /key/block refuses it), and may send blocked unchanged.
	fx := newFixture(t)
	if w := fx.do("internal_user", "POST", "/key/update", `{"key":"`+key+`","blocked":true}`); w.Code != http.StatusForbidden {
		t.Errorf("internal user blocks through update: status %d, want 403: %s", w.Code, w.Body)
	}
	if w := fx.do("internal_user", "POST", "/key/update", `{"key":"`+key+`","blocked":false,"metadata":{"a":1}}`); w.Code != http.StatusOK {
		t.Errorf("blocked unchanged: status %d, want 200: %s", w.Code, w.Body)
	}
	// The team's admin and the master may block and unblock through update
	// and regenerate.
	for _, tt := range []struct {
		role, path, body string
		want             bool
	}{
		{"team_admin", "/key/update", `{"key":"` + key + `","blocked":true}`, true},
		{"team_admin", "/key/update", `{"key":"` + key + `","blocked":false}`, false},
		{"master", "/key/update", `{"key":"` + key + `","blocked":true}`, true},
		{"team_admin", "/key/regenerate", `{"key":"` + key + `","new_key":"sk-regenerated-1","blocked":false}`, false},
		{"master", "/key/regenerate", `{"key":"sk-regenerated-1","new_key":"sk-regenerated-2","blocked":true}`, true},
	} {
		if w := fx.do(tt.role, "POST", tt.path, tt.body); w.Code != http.StatusOK {
			t.Fatalf("%s %s %s: status %d: %s", tt.role, tt.path, tt.body, w.Code, w.Body)
		}
	}
	if !fx.keyInfo(t, "sk-regenerated-2").Blocked {
		t.Error("the master's block through regenerate did not hold")
	}
}

// A team admin may add a proxy admin to its team, but may not create,
// reassign or regenerate a key of that member: the key would act with the
// member's proxy_admin role (the admin routes take the role from the key's
// user), so the team admin would hold a proxy admin's key.
func TestNoKeyAboveCallersRole(t *testing.T) {
	fx := newFixture(t)
	for _, u := range []string{"proxy_admin", "proxy_admin_viewer"} {
		if w := fx.do("team_admin", "POST", "/team/member_add", `{"team_id":"t1","member":{"user_id":"`+u+`","role":"user"}}`); w.Code != http.StatusOK {
			t.Fatalf("member_add %s: %d %s", u, w.Code, w.Body)
		}
	}
	// A key of the team for the team admin itself, and one the master made
	// for the proxy admin in the team.
	if w := fx.do("team_admin", "POST", "/key/generate", `{"team_id":"t1","key":"sk-team-admin-own"}`); w.Code != http.StatusOK {
		t.Fatalf("generate own: %d %s", w.Code, w.Body)
	}
	if w := fx.do("master", "POST", "/key/generate", `{"team_id":"t1","user_id":"proxy_admin","key":"sk-boss-team-key"}`); w.Code != http.StatusOK {
		t.Fatalf("master generate: %d %s", w.Code, w.Body)
	}

	for _, tt := range []struct {
		name, role, path, body string
	}{
		{"generate for a proxy_admin member", "team_admin", "/key/generate", `{"team_id":"t1","user_id":"proxy_admin"}`},
		{"generate for a proxy_admin_viewer member", "team_admin", "/key/generate", `{"team_id":"t1","user_id":"proxy_admin_viewer"}`},
		{"update reassigns to a proxy_admin member", "team_admin", "/key/update", `{"key":"sk-team-admin-own","user_id":"proxy_admin"}`},
		{"update a proxy_admin member's key", "team_admin", "/key/update", `{"key":"sk-boss-team-key","metadata":{"a":1}}`},
		{"regenerate a proxy_admin member's key", "team_admin", "/key/regenerate", `{"key":"sk-boss-team-key"}`},
		{"regenerate by path a proxy_admin member's key", "team_admin", "/key/sk-boss-team-key/regenerate", ``},
		{"regenerate reassigns to a proxy_admin member", "team_admin", "/key/regenerate", `{"key":"sk-team-admin-own","user_id":"proxy_admin"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if w := fx.do(tt.role, "POST", tt.path, tt.body); w.Code != http.StatusForbidden {
				t.Fatalf("status %d, want 403: %s", w.Code, w.Body)
			}
		})
	}
	if u := fx.keyInfo(t, "sk-team-admin-own").UserID; u != "team_admin" {
		t.Errorf("the team admin's key now belongs to %q", u)
	}
	if w := fx.do("master", "GET", "/key/info?key=sk-boss-team-key", ""); w.Code != http.StatusOK {
		t.Errorf("the proxy admin's key changed secret: %d %s", w.Code, w.Body)
	}

	// What a team admin may do stays allowed: keys of the team's members
	// whose role is not above its own, and its own.
	for _, tt := range []struct{ path, body string }{
		{"/key/generate", `{"team_id":"t1","user_id":"internal_user"}`},
		{"/key/update", `{"key":"sk-own-internal-key","metadata":{"a":1}}`},
		{"/key/regenerate", `{"key":"sk-team-admin-own"}`},
		{"/key/sk-own-internal-key/regenerate", ``},
	} {
		if w := fx.do("team_admin", "POST", tt.path, tt.body); w.Code != http.StatusOK {
			t.Errorf("%s %s: status %d, want 200: %s", tt.path, tt.body, w.Code, w.Body)
		}
	}
	// The master may do all of it.
	if w := fx.do("master", "POST", "/key/update", `{"key":"sk-boss-team-key","metadata":{"a":1}}`); w.Code != http.StatusOK {
		t.Errorf("master update: %d %s", w.Code, w.Body)
	}
}

// An internal_user_viewer that is a team admin may not hand out a key of an
// internal_user member (internal_user may write keys; the viewer may not).
func TestViewerTeamAdminNoKeyAboveOwnRole(t *testing.T) {
	fx := newFixture(t)
	if w := fx.do("master", "POST", "/team/member_add", `{"team_id":"t2","member":{"user_id":"internal_user_viewer","role":"admin"}}`); w.Code != http.StatusOK {
		t.Fatalf("member_add: %d %s", w.Code, w.Body)
	}
	if w := fx.do("master", "POST", "/team/member_add", `{"team_id":"t2","member":{"user_id":"internal_user","role":"user"}}`); w.Code != http.StatusOK {
		t.Fatalf("member_add: %d %s", w.Code, w.Body)
	}
	if w := fx.do("internal_user_viewer", "POST", "/key/generate", `{"team_id":"t2","user_id":"internal_user"}`); w.Code != http.StatusForbidden {
		t.Errorf("status %d, want 403: %s", w.Code, w.Body)
	}
	if w := fx.do("internal_user_viewer", "POST", "/key/generate", `{"team_id":"t2"}`); w.Code != http.StatusOK {
		t.Errorf("its own team key: status %d, want 200: %s", w.Code, w.Body)
	}
}
