package adminapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/adminapi"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/spend"
)

// fuzzRoutes are the routes that read a request body.
var fuzzRoutes = []string{
	"/key/generate", "/key/update", "/key/delete", "/key/block", "/key/unblock", "/key/regenerate",
	"/team/new", "/team/update", "/team/delete", "/team/member_add", "/team/member_update", "/team/member_delete",
	"/team/block", "/team/unblock",
	"/user/new", "/user/update", "/user/delete",
	"/customer/new", "/customer/update", "/customer/delete", "/customer/block", "/customer/unblock",
	"/organization/new", "/organization/update", "/organization/delete", "/organization/info",
	"/organization/member_add", "/organization/member_update", "/organization/member_delete",
	"/model/new", "/model/update", "/model/m1/update", "/model/delete",
}

// fuzzMethods are the methods of the fuzzed routes that are not POST.
var fuzzMethods = map[string]string{
	"/organization/update": http.MethodPatch, "/organization/delete": http.MethodDelete,
	"/organization/member_update": http.MethodPatch, "/organization/member_delete": http.MethodDelete,
	"/model/m1/update": http.MethodPatch,
}

// fuzzCallers are who makes the fuzzed request (by their key).
var fuzzCallers = []string{"master", "proxy_admin", "internal_user", "team_admin", "proxy_admin_viewer"}

const fuzzMaster = "sk-master-fuzz-4c1e9a07"

var defaultConfig = sync.OnceValue(config.Default)

// fuzzFixture is fresh state for one input: users of each role with a key
// each, two teams (team_admin admin of t1), an end user, and the secrets
// none of the responses may show.
func fuzzFixture(t *testing.T, logs *bytes.Buffer) (http.Handler, map[string]string) {
	ctx := context.Background()
	ks := keys.NewMemory()
	cat := newCatalog(t, catalogBase)
	if err := cat.Store.Create(ctx, models.Record{ID: "m1", ModelName: "stored", Params: map[string]any{"model": "openai/gpt-4o"}}); err != nil {
		t.Fatal(err)
	}
	h := adminapi.New(adminapi.Options{MasterKey: fuzzMaster, Keys: ks, Spend: spend.NewMemory(ks), Config: defaultConfig(), Models: cat,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	secrets := map[string]string{"master": fuzzMaster}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []keys.User{{ID: "proxy_admin", Role: keys.RoleProxyAdmin}, {ID: "internal_user", Role: keys.RoleInternalUser},
		{ID: "team_admin", Role: keys.RoleInternalUser}, {ID: "proxy_admin_viewer", Role: keys.RoleProxyAdminViewer}} {
		must(ks.Users().Create(ctx, u))
		secret := "sk-fuzz-" + u.ID + "-7d2f0b"
		must(ks.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secret), UserID: u.ID, Alias: "alias-" + u.ID}))
		secrets[u.ID] = secret
	}
	must(ks.Organizations().Create(ctx, keys.Organization{ID: "o1"}))
	must(ks.AddMember(ctx, keys.Member{Group: keys.KindOrg, GroupID: "o1", UserID: "team_admin", Role: keys.OrgAdmin}))
	must(ks.Teams().Create(ctx, keys.Team{ID: "t1", OrganizationID: "o1"}))
	must(ks.Teams().Create(ctx, keys.Team{ID: "t2"}))
	must(ks.AddMember(ctx, keys.Member{Group: keys.KindTeam, GroupID: "t1", UserID: "team_admin", Role: keys.MemberAdmin}))
	must(ks.AddMember(ctx, keys.Member{Group: keys.KindTeam, GroupID: "t1", UserID: "internal_user", Role: keys.MemberUser}))
	secrets["team_key"] = "sk-fuzz-team-key-a93c51"
	must(ks.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secrets["team_key"]), UserID: "internal_user", TeamID: "t1"}))
	must(ks.EndUsers().Create(ctx, keys.EndUser{ID: "cust"}))
	return h, secrets
}

// mentions reports whether the request body names secret, as written or
// in any JSON string it holds (escapes decoded).
func mentions(body []byte, secret string) bool {
	if bytes.Contains(body, []byte(secret)) {
		return true
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			return strings.Contains(v, secret)
		case []any:
			for _, x := range v {
				if walk(x) {
					return true
				}
			}
		case map[string]any:
			for k, x := range v {
				if strings.Contains(k, secret) || walk(x) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// FuzzRoutes sends any body to the key, team, user and customer routes
// through the real handler on the memory store, as one of several callers.
// Invariants: no panic; a 2xx with a JSON body, or a 4xx with an
// OpenAI-style JSON error (never a 5xx); no secret (the master key, any
// other caller's key) in the response or the logs unless the request
// carried it; afterwards the store still lists keys, teams, users and end
// users (no record written that breaks reading).
//
// The seed corpus is in testdata/fuzz/FuzzRoutes.
func FuzzRoutes(f *testing.F) {
	for i, b := range []string{
		`{}`,
		`{"key":"sk-fuzz-team-key-a93c51","metadata":{"a":1},"models":["gpt-4o"],"max_budget":10,"budget_duration":"30d","duration":"1h"}`,
		`{"keys":["sk-fuzz-team-key-a93c51"]}`,
		`{"key":"sk-fuzz-team-key-a93c51"}`,
		`{"key":"sk-fuzz-team-key-a93c51"}`,
		`{"key":"sk-fuzz-team-key-a93c51","new_key":"sk-brand-new-key"}`,
		`{"team_id":"t9","team_alias":"Équipe 🚀","models":["gpt-4o"],"rpm_limit":100,"members_with_roles":[{"role":"admin","user_id":"internal_user"}]}`,
		`{"team_id":"t1","max_budget":1e308}`,
		`{"team_ids":["t2"]}`,
		`{"team_id":"t1","member":[{"role":"user","user_id":"new"},{"role":"admin","user_email":"a@b.c"}]}`,
		`{"team_id":"t1","user_id":"internal_user","role":"admin","max_budget_in_team":5}`,
		`{"team_id":"t1","user_id":"internal_user"}`,
		`{"team_id":"t2"}`,
		`{"team_id":"t2"}`,
		`{"user_id":"u9","user_email":"u9@example.com","user_role":"internal_user","teams":["t1"],"auto_create_key":true}`,
		`{"user_id":"internal_user","tpm_limit":1.5}`,
		`{"user_ids":["team_admin"]}`,
		`{"user_id":"cust2","alias":"x","max_budget":0,"blocked":true}`,
		`{"user_id":"cust","budget_duration":"1mo"}`,
		`{"user_ids":["cust"]}`,
		`{"user_ids":["cust","missing"]}`,
		`{"user_ids":["cust"]}`,
		`{"organization_id":"o2","organization_alias":"Org 🚀","models":["gpt-4o"],"max_budget":10,"budget_id":"b"}`,
		`{"organization_id":"o1","max_budget":1e308,"rpm_limit":5}`,
		`{"organization_ids":["o1"]}`,
		`{"organizations":["o1"]}`,
		`{"organization_id":"o1","member":[{"user_id":"new","role":"org_admin"},{"user_email":"a@b.c","role":"internal_user"}],"max_budget_in_organization":2}`,
		`{"organization_id":"o1","user_id":"team_admin","role":"internal_user","max_budget_in_organization":1}`,
		`{"organization_id":"o1","user_email":"a@b.c"}`,
		`{"model_name":"m","litellm_params":{"model":"anthropic/claude-x","api_key":"sk-x","rpm":5,"region_name":"eu"},"model_info":{"id":"n1","access_groups":["g"]}}`,
		`{"model_info":{"id":"m1"},"litellm_params":{"rpm":"lots","api_key":null}}`,
		`{"litellm_params":{"model":null,"tpm":9007199254740993,"weight":1e400}}`,
		`{"id":"m1"}`,
	} {
		f.Add(uint8(i), uint8(0), []byte(b))
	}
	f.Fuzz(func(t *testing.T, route, caller uint8, body []byte) {
		var logs bytes.Buffer
		h, secrets := fuzzFixture(t, &logs)
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		who := fuzzCallers[int(caller)%len(fuzzCallers)]
		method := fuzzMethods[path]
		if method == "" {
			method = http.MethodPost
		}
		w := gatewaytest.Do(h, gatewaytest.Request(method, path, secrets[who], string(body)))

		out := w.Body.Bytes()
		switch {
		case w.Code >= 200 && w.Code < 300:
			if !json.Valid(out) {
				t.Fatalf("%s as %s: %d with a body that is not JSON: %s", path, who, w.Code, out)
			}
		case w.Code >= 400 && w.Code < 500:
			var e struct {
				Error *struct {
					Message *string `json:"message"`
					Type    *string `json:"type"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out, &e); err != nil || e.Error == nil || e.Error.Message == nil || *e.Error.Message == "" || e.Error.Type == nil {
				t.Fatalf("%s as %s: %d without an OpenAI-style error: %s", path, who, w.Code, out)
			}
		default:
			t.Fatalf("%s as %s: status %d: %s\nbody: %q", path, who, w.Code, out, body)
		}
		if path == "/key/generate" && w.Code == http.StatusOK {
			checkExpiry(t, body, out)
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s: Content-Type %q", path, ct)
		}
		for name, s := range secrets {
			if name == who || mentions(body, s) {
				continue
			}
			if bytes.Contains(out, []byte(s)) {
				t.Fatalf("%s as %s: the secret of %s in the response: %s", path, who, name, out)
			}
			if strings.Contains(logs.String(), s) {
				t.Fatalf("%s as %s: the secret of %s in the logs: %s", path, who, name, logs.String())
			}
		}
		if !mentions(body, fuzzMaster) && strings.Contains(logs.String(), fuzzMaster) {
			t.Fatalf("the master key in the logs: %s", logs.String())
		}
		for _, list := range []string{"/key/list", "/team/list", "/user/list", "/customer/list", "/organization/list"} {
			w := gatewaytest.Do(h, gatewaytest.Request(http.MethodGet, list, fuzzMaster, ""))
			if w.Code != http.StatusOK || !json.Valid(w.Body.Bytes()) {
				t.Fatalf("after %s %q: %s answers %d: %s", path, body, list, w.Code, w.Body)
			}
		}
	})
}

// checkExpiry asserts that a key generated with a duration expires after
// now (a duration that overflowed once gave a key that never expired, or
// expired centuries early).
func checkExpiry(t *testing.T, body, out []byte) {
	t.Helper()
	var req struct {
		Duration *string `json:"duration"`
	}
	var resp struct {
		Expires *time.Time `json:"expires"`
	}
	if json.Unmarshal(body, &req) != nil || req.Duration == nil || json.Unmarshal(out, &resp) != nil {
		return
	}
	if resp.Expires == nil || !resp.Expires.After(time.Now()) {
		t.Fatalf("a key generated with duration %q expires %v", *req.Duration, resp.Expires)
	}
}
