package adminapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

func TestMain(m *testing.M) { os.Exit(ddblocal.Main(m)) }

// logs collects every log line of a test's handlers.
type logs = gatewaytest.Logs

const suiteConfig = `model_list:
  - model_name: gpt-4o
    litellm_params: {model: mock/gpt-4o, api_key: sk-provider-secret-value, mock_response: "hi"}
  - model_name: gpt-4o-mini
    litellm_params: {model: mock/gpt-4o-mini, mock_response: "hi"}
general_settings:
  master_key: sk-master-test
`

// client calls one assembled gateway (gateway and admin routes on one handler).
type client struct {
	t *testing.T
	h http.Handler
}

func (c client) call(key, method, path, body string) (int, map[string]any, string) {
	c.t.Helper()
	w := gatewaytest.Do(c.h, gatewaytest.Request(method, path, key, body))
	var m map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &m)
	return w.Code, m, w.Body.String()
}

func (c client) must(key, method, path, body string) map[string]any {
	c.t.Helper()
	code, m, raw := c.call(key, method, path, body)
	if code != 200 {
		c.t.Fatalf("%s %s %s: status %d: %s", method, path, body, code, raw)
	}
	return m
}

// errParam asserts an OpenAI error with status and param.
func (c client) errParam(key, method, path, body string, status int, param string) {
	c.t.Helper()
	code, m, raw := c.call(key, method, path, body)
	e, _ := m["error"].(map[string]any)
	if code != status || e == nil || (param != "" && e["param"] != param) {
		c.t.Errorf("%s %s %s: status %d body %s; want %d naming %q", method, path, body, code, raw, status, param)
	}
}

// build assembles the gateway and admin API (app.Build) of the suite's
// config on store, logging to logger (nil: the default).
func build(t *testing.T, store string, logger *slog.Logger) *app.Gateway {
	t.Helper()
	return buildWith(t, suiteConfig, store, logger)
}

// buildWith is build with the config configYAML; the gateway is closed when t
// ends (its queued spend recorded).
func buildWith(t *testing.T, configYAML, store string, logger *slog.Logger) *app.Gateway {
	t.Helper()
	s := app.Settings{ConfigYAML: []byte(configYAML), Store: store, KeyCacheTTL: 1, Logger: logger}
	if store == app.StoreDynamoDB {
		cfg := ddblocal.Config(t)
		s.AWS, s.Emulator, s.Tables = &cfg, true, ddblocal.Tables(t)
	}
	gw, err := app.Build(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close(context.Background()) })
	return gw
}

// pricedConfig is a mock model with a price, so that its calls spend.
const pricedConfig = `model_list:
  - model_name: gpt-4o
    litellm_params: {model: mock/gpt-4o, mock_response: "hi", input_cost_per_token: 0.001, output_cost_per_token: 0.002}
general_settings:
  master_key: sk-master-test
`

// TestRoutes runs the routes through the real handler (app.Build), on the
// memory store and on DynamoDB Local.
func TestRoutes(t *testing.T) {
	for _, store := range []string{app.StoreMemory, app.StoreDynamoDB} {
		t.Run(store, func(t *testing.T) {
			lg := &logs{}
			gw := build(t, store, slog.New(slog.NewJSONHandler(lg, &slog.HandlerOptions{Level: slog.LevelDebug})))
			secrets := runRoutes(t, client{t, gw.HTTP})
			// No secret in any log line.
			out := lg.String()
			if !strings.Contains(out, `"msg":"admin"`) {
				t.Fatalf("no admin log lines captured:\n%s", out)
			}
			for _, sec := range append(secrets, "sk-provider-secret-value") {
				if strings.Contains(out, sec) {
					t.Errorf("a secret appears in the logs: %s...", sec[:6])
				}
			}
		})
	}
}

func runRoutes(t *testing.T, c client) (secrets []string) {
	const m = "sk-master-test"
	chat := func(key, model string) int {
		code, _, _ := c.call(key, "POST", "/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
		return code
	}

	// A team, a user in it, a key in the team for the user.
	team := c.must(m, "POST", "/team/new", `{"team_id":"research","team_alias":"Research","models":["gpt-4o","gpt-4o-mini"],"max_budget":100,"budget_duration":"30d","metadata":{"cost_center":"42"}}`)
	if team["team_id"] != "research" || team["max_budget"] != 100.0 || team["budget_duration"] != "30d" {
		t.Fatalf("team/new = %v", team)
	}
	c.errParam(m, "POST", "/team/new", `{"team_id":"research"}`, 400, "team_id")
	user := c.must(m, "POST", "/user/new", `{"user_id":"ann","user_email":"ann@example.com","user_role":"internal_user","teams":["research"]}`)
	userKey, _ := user["key"].(string)
	if !strings.HasPrefix(userKey, "sk-") || user["teams"].([]any)[0] != "research" {
		t.Fatalf("user/new = %v", user)
	}
	secrets = append(secrets, userKey)
	c.errParam(m, "POST", "/user/new", `{"user_id":"ann"}`, 409, "user_id")
	noKey := c.must(m, "POST", "/user/new", `{"user_id":"bob","auto_create_key":false}`)
	if noKey["key"] != nil {
		t.Fatalf("auto_create_key false made a key: %v", noKey)
	}

	gen := c.must(m, "POST", "/key/generate", `{"team_id":"research","user_id":"ann","key_alias":"ann-ci","models":["gpt-4o-mini"],"rpm_limit":100,"max_budget":5,"duration":"30d","tags":["ci"],"metadata":{"env":"ci"}}`)
	secret := gen["key"].(string)
	secrets = append(secrets, secret)
	if len(secret) < 3+22 || gen["token"] == secret || gen["key_name"] != "sk-..."+secret[len(secret)-4:] || gen["expires"] == nil {
		t.Fatalf("key/generate = %v", gen)
	}
	hash := gen["token"].(string)
	c.errParam(m, "POST", "/key/generate", `{"key_alias":"ann-ci"}`, 400, "key_alias")
	c.errParam(m, "POST", "/key/generate", `{"key":"not-sk"}`, 400, "key")
	c.errParam(m, "POST", "/key/generate", `{"team_id":"nope"}`, 404, "team_id")

	// The gateway honours it: its model, not others.
	if code := chat(secret, "gpt-4o-mini"); code != 200 {
		t.Fatalf("chat with the new key: %d", code)
	}
	if code := chat(secret, "gpt-4o"); code != 403 {
		t.Fatalf("chat with a model the key may not use: %d", code)
	}

	// Info and list.
	info := c.must(m, "GET", "/key/info?key="+secret, "")
	if info["key"] != hash || info["info"].(map[string]any)["key_alias"] != "ann-ci" {
		t.Fatalf("key/info = %v", info)
	}
	if own := c.must(secret, "GET", "/key/info", ""); own["key"] != hash {
		t.Fatalf("key/info of the caller's own key = %v", own)
	}
	c.errParam(m, "GET", "/key/info?key=sk-does-not-exist", "", 404, "key")
	list := c.must(m, "GET", "/key/list?team_id=research&size=1&page=1", "")
	if list["total_count"] != 1.0 || list["total_pages"] != 1.0 || list["keys"].([]any)[0] != hash {
		t.Fatalf("key/list = %v", list)
	}
	if l := c.must(m, "GET", "/key/list?user_id=ann&return_full_object=true", ""); l["total_count"] != 2.0 {
		t.Fatalf("key/list by user = %v", l)
	}
	c.errParam(m, "GET", "/key/list?page=0", "", 400, "page")

	// Updates, and the errors of bad bodies.
	up := c.must(m, "POST", "/key/update", `{"key":"`+secret+`","models":["gpt-4o"],"rpm_limit":2}`)
	if up["rpm_limit"] != 2.0 || up["key_alias"] != "ann-ci" {
		t.Fatalf("key/update = %v", up)
	}
	if code := chat(secret, "gpt-4o"); code != 200 {
		t.Fatalf("chat after the models change: %d", code)
	}
	// Over rpm_limit 2 (one used before): refused. Counted in real-clock
	// minutes, so a minute may begin between two calls and admit two more:
	// within three calls, one is refused whatever the clock.
	limited := 0
	for i := 0; i < 3 && limited == 0; i++ {
		if chat(secret, "gpt-4o") == 429 {
			limited = i + 1
		}
	}
	if limited == 0 {
		t.Fatal("three chats over rpm_limit 2 were all served")
	}
	c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`"`, 400, "")
	c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`","rpm_limit":"ten"}`, 400, "rpm_limit")
	c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`","max_budget":-1}`, 400, "max_budget")
	c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`","tpm_limit":-5}`, 400, "tpm_limit")
	c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`","budget_duration":"fortnight"}`, 400, "budget_duration")
	c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`","max_parallel_requests":-1}`, 400, "max_parallel_requests")
	c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`","max_parallel_requests":1.5}`, 400, "max_parallel_requests")
	if b := c.must(m, "POST", "/key/update", `{"key":"`+secret+`","max_parallel_requests":0}`); b["max_parallel_requests"] != 0.0 {
		t.Fatalf("max_parallel_requests 0 = %v", b["max_parallel_requests"])
	}
	c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`","model_max_budget":{"gpt-4o":1}}`, 400, "model_max_budget")
	c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`","model_rpm_limit":{"gpt-4o":-1}}`, 400, "model_rpm_limit")
	c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`","model_tpm_limit":[1]}`, 400, "model_tpm_limit")
	if b := c.must(m, "POST", "/key/update", `{"key":"`+secret+`","model_rpm_limit":{"gpt-4o":100},"model_tpm_limit":{"gpt-4o":100000}}`); fmt.Sprint(b["model_rpm_limit"], b["model_tpm_limit"]) != "map[gpt-4o:100] map[gpt-4o:100000]" {
		t.Fatalf("model limits = %v %v", b["model_rpm_limit"], b["model_tpm_limit"])
	}
	if b := c.must(m, "POST", "/key/update", `{"key":"`+secret+`","model_rpm_limit":null,"model_tpm_limit":{}}`); b["model_rpm_limit"] != nil || b["model_tpm_limit"] != nil {
		t.Fatalf("cleared model limits = %v %v", b["model_rpm_limit"], b["model_tpm_limit"])
	}
	c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`","max_budgett":1}`, 400, "max_budgett")
	c.errParam(m, "POST", "/key/update", `{"key":"sk-unknown-key","rpm_limit":1}`, 404, "key")
	if b := c.must(m, "POST", "/key/update", `{"key":"`+secret+`","max_parallel_requests":null,"aliases":{},"permissions":{}}`); b["max_parallel_requests"] != nil {
		t.Fatalf("max_parallel_requests null = %v", b["max_parallel_requests"])
	}

	// Block, unblock.
	if b := c.must(m, "POST", "/key/block", `{"key":"`+secret+`"}`); b["blocked"] != true {
		t.Fatalf("key/block = %v", b)
	}
	if code := chat(secret, "gpt-4o-mini"); code != 401 {
		t.Fatalf("chat with a blocked key: %d", code)
	}
	c.must(m, "POST", "/key/unblock", `{"key":"`+hash+`"}`)
	c.must(m, "POST", "/key/update", `{"key":"`+hash+`","rpm_limit":null}`)
	if code := chat(secret, "gpt-4o"); code != 200 {
		t.Fatalf("chat after unblock: %d", code)
	}

	// Regenerate: the old secret stops, the new one works, spend and alias stay.
	regen := c.must(m, "POST", "/key/"+secret+"/regenerate", "")
	newSecret := regen["key"].(string)
	secrets = append(secrets, newSecret)
	if newSecret == secret || regen["key_alias"] != "ann-ci" {
		t.Fatalf("regenerate = %v", regen)
	}
	if code := chat(secret, "gpt-4o"); code != 401 {
		t.Fatalf("old secret after regenerate: %d", code)
	}
	if code := chat(newSecret, "gpt-4o"); code != 200 {
		t.Fatalf("new secret after regenerate: %d", code)
	}

	// Team members and team info.
	c.must(m, "POST", "/team/member_add", `{"team_id":"research","member":{"role":"admin","user_id":"bob"},"max_budget_in_team":3}`)
	c.errParam(m, "POST", "/team/member_add", `{"team_id":"research","member":{"role":"admin","user_id":"bob"}}`, 400, "member")
	c.errParam(m, "POST", "/team/member_add", `{"team_id":"nope","member":{"user_id":"bob"}}`, 404, "team_id")
	c.errParam(m, "POST", "/team/member_add", `{"team_id":"research","member":{"role":"owner","user_id":"carl"}}`, 400, "member")
	ti := c.must(m, "GET", "/team/info?team_id=research", "")
	if len(ti["keys"].([]any)) != 1 || len(ti["team_memberships"].([]any)) != 2 || len(ti["team_info"].(map[string]any)["members_with_roles"].([]any)) != 2 {
		t.Fatalf("team/info = %v", ti)
	}
	c.errParam(m, "GET", "/team/info?team_id=nope", "", 404, "team_id")
	c.must(m, "POST", "/team/member_delete", `{"team_id":"research","user_id":"bob"}`)
	c.errParam(m, "POST", "/team/member_delete", `{"team_id":"research","user_id":"bob"}`, 400, "user_id") // LiteLLM: 400 User not found in team
	if tl := c.must(m, "GET", "/team/list", ""); tl == nil {
		_, _, raw := c.call(m, "GET", "/team/list", "")
		if !strings.HasPrefix(raw, "[") {
			t.Fatalf("team/list = %s", raw)
		}
	}

	// A blocked team stops its keys.
	c.must(m, "POST", "/team/block", `{"team_id":"research"}`)
	if code := chat(newSecret, "gpt-4o"); code != 401 {
		t.Fatalf("chat with a key of a blocked team: %d", code)
	}
	c.must(m, "POST", "/team/unblock", `{"team_id":"research"}`)
	c.must(m, "POST", "/team/update", `{"team_id":"research","models":["gpt-4o-mini"]}`)
	if code := chat(newSecret, "gpt-4o"); code != 403 {
		t.Fatalf("chat with a model the team no longer allows: %d", code)
	}

	// Users.
	ui := c.must(m, "GET", "/user/info?user_id=ann", "")
	if len(ui["keys"].([]any)) != 2 || len(ui["teams"].([]any)) != 1 {
		t.Fatalf("user/info = %v", ui)
	}
	c.errParam(m, "GET", "/user/info?user_id=nobody", "", 404, "user_id")
	if ul := c.must(m, "GET", "/user/list?page_size=1", ""); ul["total"] != 2.0 || len(ul["users"].([]any)) != 1 {
		t.Fatalf("user/list = %v", ul)
	}
	c.must(m, "POST", "/user/update", `{"user_id":"ann","user_alias":"Ann"}`)
	c.errParam(m, "POST", "/user/update", `{"user_id":"ann","user_role":"root"}`, 400, "user_role")
	c.errParam(m, "POST", "/user/delete", `{"user_ids":["nobody"]}`, 404, "user_ids")

	// End users.
	cu := c.must(m, "POST", "/customer/new", `{"user_id":"acme","alias":"ACME","max_budget":2,"rpm_limit":10}`)
	if cu["user_id"] != "acme" || cu["litellm_budget_table"].(map[string]any)["max_budget"] != 2.0 {
		t.Fatalf("customer/new = %v", cu)
	}
	c.errParam(m, "POST", "/customer/new", `{"user_id":"acme"}`, 400, "user_id")
	c.errParam(m, "POST", "/customer/new", `{"user_id":"x","allowed_model_region":"asia"}`, 400, "allowed_model_region")
	if eu := c.must(m, "POST", "/end_user/new", `{"user_id":"eu1","allowed_model_region":"eu"}`); eu["allowed_model_region"] != "eu" {
		t.Fatalf("end_user/new with a region = %v", eu)
	}
	c.must(m, "POST", "/customer/update", `{"user_id":"eu1","allowed_model_region":"us"}`)
	if eu := c.must(m, "GET", "/customer/info?end_user_id=eu1", ""); eu["allowed_model_region"] != "us" {
		t.Fatalf("customer/info after update = %v", eu)
	}
	c.must(m, "POST", "/customer/delete", `{"user_ids":["eu1"]}`)
	c.errParam(m, "POST", "/customer/new", `{"user_id":"x","default_model":"gpt-4o"}`, 400, "default_model")
	c.must(m, "POST", "/customer/block", `{"user_ids":["acme"]}`)
	if code, _, _ := c.call(newSecret, "POST", "/v1/chat/completions", `{"model":"gpt-4o-mini","user":"acme","messages":[{"role":"user","content":"hi"}]}`); code != 403 {
		t.Fatalf("chat for a blocked end user: %d", code)
	}
	c.must(m, "POST", "/customer/unblock", `{"user_ids":["acme"]}`)
	if ci := c.must(m, "GET", "/customer/info?end_user_id=acme", ""); ci["blocked"] != false {
		t.Fatalf("customer/info = %v", ci)
	}
	c.must(m, "POST", "/customer/update", `{"user_id":"acme","max_budget":null}`)
	c.errParam(m, "GET", "/customer/info?end_user_id=nope", "", 404, "end_user_id")
	c.must(m, "POST", "/customer/delete", `{"user_ids":["acme"]}`)
	c.errParam(m, "POST", "/customer/delete", `{"user_ids":["acme"]}`, 404, "user_ids")

	// Model info: deployments without secrets.
	_, _, raw := c.call(m, "GET", "/v1/model/info", "")
	if !strings.Contains(raw, `"model_name":"gpt-4o"`) || strings.Contains(raw, "sk-provider-secret-value") || strings.Contains(raw, "api_key") {
		t.Fatalf("model/info = %s", raw)
	}
	// The key allows gpt-4o, its team now only gpt-4o-mini: nothing.
	if mi := c.must(newSecret, "GET", "/model/info", ""); len(mi["data"].([]any)) != 0 {
		t.Fatalf("model/info for a key whose team allows none of its models = %v", mi)
	}
	c.must(m, "POST", "/team/update", `{"team_id":"research","models":[]}`)
	if mi := c.must(newSecret, "GET", "/model/info", ""); len(mi["data"].([]any)) != 1 {
		t.Fatalf("model/info for a key limited to one model = %v", mi)
	}

	// Delete by alias: an audit copy remains, the secret stops.
	del := c.must(m, "POST", "/key/delete", `{"key_aliases":["ann-ci"]}`)
	if len(del["deleted_keys"].([]any)) != 1 {
		t.Fatalf("key/delete = %v", del)
	}
	if code := chat(newSecret, "gpt-4o-mini"); code != 401 {
		t.Fatalf("chat with a deleted key: %d", code)
	}
	dl := c.must(m, "GET", "/key/list?status=deleted", "")
	keysDel := dl["keys"].([]any)
	if len(keysDel) < 1 || keysDel[len(keysDel)-1].(map[string]any)["deleted_by"] != "master_key" {
		t.Fatalf("key/list?status=deleted = %v", dl)
	}
	c.errParam(m, "POST", "/key/delete", `{"keys":["`+newSecret+`"]}`, 404, "keys")

	// Deleting the team deletes its keys; deleting a user, its keys.
	k2 := c.must(m, "POST", "/key/generate", `{"team_id":"research"}`)["key"].(string)
	secrets = append(secrets, k2)
	c.must(m, "POST", "/team/delete", `{"team_ids":["research"]}`)
	if code := chat(k2, "gpt-4o-mini"); code != 401 {
		t.Fatalf("key of a deleted team: %d", code)
	}
	c.must(m, "POST", "/user/delete", `{"user_ids":["ann"]}`)
	if code := chat(userKey, "gpt-4o-mini"); code != 401 {
		t.Fatalf("key of a deleted user: %d", code)
	}
	c.errParam(m, "POST", "/team/delete", `{"team_ids":["research"]}`, 404, "team_ids")

	// Credentials as LiteLLM reads them.
	for _, hdr := range []string{"X-Litellm-Api-Key", "Api-Key", "X-Api-Key"} {
		r := httptest.NewRequest("GET", "/user/list", nil)
		r.Header.Set(hdr, m)
		w := httptest.NewRecorder()
		c.h.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Errorf("credential in %s: status %d", hdr, w.Code)
		}
	}
	c.errParam("", "GET", "/user/list", "", 401, "")
	c.errParam("sk-wrong", "GET", "/user/list", "", 401, "")
	return secrets
}

// Without a master key the admin routes answer 401 and say how to set one.
func TestNoMasterKey(t *testing.T) {
	gw, err := app.Build(context.Background(), app.Settings{Logger: slog.New(slog.NewTextHandler(&logs{}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c := client{t, gw.HTTP}
	code, body, raw := c.call("anything", "POST", "/key/generate", `{}`)
	if code != 401 || !strings.Contains(raw, "GATEWAY_MASTER_KEY") {
		t.Fatalf("status %d body %v", code, body)
	}
	// The gateway itself stays open (LiteLLM's behaviour without a master key).
	if code, _, _ := c.call("", "GET", "/v1/models", ""); code != 200 {
		t.Fatalf("GET /v1/models without a master key: %d", code)
	}
}

// TestMoneyRange: a budget past what the stores keep (DynamoDB numbers
// overflow above 1e125 and underflow below 1e-130) or below the spend
// unit (one nano-dollar) is a 400 naming the field on every store, never
// a 500 on one of them; the edges of the range are accepted.
func TestMoneyRange(t *testing.T) {
	onStores(t, func(t *testing.T, c client) {
		const m = "sk-master-test"
		c.must(m, "POST", "/team/new", `{"team_id":"money"}`)
		n := 0
		routes := []struct {
			path  string
			body  func(id, field, v string) string
			field []string
		}{
			{"/key/generate", func(id, f, v string) string { return fmt.Sprintf(`{"key_alias":%q,%q:%s}`, id, f, v) }, []string{"max_budget", "soft_budget"}},
			{"/team/new", func(id, f, v string) string { return fmt.Sprintf(`{"team_id":%q,%q:%s}`, id, f, v) }, []string{"max_budget", "soft_budget"}},
			{"/user/new", func(id, f, v string) string {
				return fmt.Sprintf(`{"user_id":%q,"auto_create_key":false,%q:%s}`, id, f, v)
			}, []string{"max_budget", "soft_budget"}},
			{"/customer/new", func(id, f, v string) string { return fmt.Sprintf(`{"user_id":%q,%q:%s}`, id, f, v) }, []string{"max_budget", "soft_budget"}},
			{"/team/member_add", func(id, f, v string) string {
				return fmt.Sprintf(`{"team_id":"money","member":{"user_id":%q,"role":"user"},%q:%s}`, id, f, v)
			}, []string{"max_budget_in_team"}},
		}
		for _, rt := range routes {
			for _, f := range rt.field {
				for _, v := range []string{"1e200", "1e-200", "1e16", "1.5e15", "0.0000000009", "1e-10"} {
					n++
					c.errParam(m, "POST", rt.path, rt.body(fmt.Sprintf("id-%d", n), f, v), 400, f)
				}
				// numbers in strings, as LiteLLM takes them ("max_budget": "0" in its docs)
				for _, v := range []string{`"NaN"`, `"1e309"`, `"-1"`, `"Infinity"`, `"abc"`, `""`, `"1e-10"`} {
					n++
					c.errParam(m, "POST", rt.path, rt.body(fmt.Sprintf("id-%d", n), f, v), 400, f)
				}
				for _, v := range []string{"0", "1e-9", "0.000000001", "12.5", "1e15", `"0"`, `"12.5"`} {
					n++
					c.must(m, "POST", rt.path, rt.body(fmt.Sprintf("id-%d", n), f, v))
				}
			}
		}
		// /key/update reads money the same way.
		k := c.must(m, "POST", "/key/generate", `{}`)
		c.errParam(m, "POST", "/key/update", fmt.Sprintf(`{"key":%q,"max_budget":1e200}`, k["key"]), 400, "max_budget")
		c.must(m, "POST", "/key/update", fmt.Sprintf(`{"key":%q,"max_budget":1e15}`, k["key"]))
	})
}

// onStores runs f against a fresh admin API over each store (memory and
// DynamoDB Local), with c bound to that store's handler.
func onStores(t *testing.T, f func(t *testing.T, c client)) {
	onStoresWith(t, suiteConfig, func(t *testing.T, _ *app.Gateway, c client) { f(t, c) })
}

// onStoresWith runs f on a gateway of the config configYAML on each
// store, with a client of its HTTP handler.
func onStoresWith(t *testing.T, configYAML string, f func(t *testing.T, gw *app.Gateway, c client)) {
	for _, store := range []string{app.StoreMemory, app.StoreDynamoDB} {
		t.Run(store, func(t *testing.T) {
			gw := buildWith(t, configYAML, store, nil)
			f(t, gw, client{t, gw.HTTP})
		})
	}
}
