package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
)

const accessGroupsConfig = `model_list:
  - model_name: beta-a
    litellm_params: {model: mock/a, mock_response: hi}
    model_info: {access_groups: [beta-models]}
  - model_name: beta-b
    litellm_params: {model: mock/b, mock_response: hi}
    model_info: {access_groups: [beta-models, extra]}
  - model_name: other
    litellm_params: {model: mock/c, mock_response: hi}
  - model_name: "openai/*"
    litellm_params: {model: "openai/*", api_key: sk-up}
    model_info: {access_groups: [wild]}
general_settings: {master_key: sk-master}
`

// accessGroupsFixture serves accessGroupsConfig with keys naming access
// groups (directly and through a team).
func accessGroupsFixture(t *testing.T) *fixture {
	t.Helper()
	cfg := loadConfig(t, accessGroupsConfig)
	store, ctx := keys.NewMemory(), context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(store.Teams().Create(ctx, keys.Team{ID: "t-beta", Settings: keys.Settings{Models: []string{"beta-models"}}}))
	must(store.Teams().Create(ctx, keys.Team{ID: "t-other", Settings: keys.Settings{Models: []string{"other"}}}))
	for _, k := range []keys.Key{
		{Hash: keys.HashSecret("sk-beta"), Settings: keys.Settings{Models: []string{"beta-models"}}},
		{Hash: keys.HashSecret("sk-team-beta"), TeamID: "t-beta"},
		{Hash: keys.HashSecret("sk-team-other"), TeamID: "t-other"},
		{Hash: keys.HashSecret("sk-all"), Settings: keys.Settings{}},
	} {
		must(store.CreateKey(ctx, k))
	}
	return serve(t, testHandler(Options{Config: cfg, Keys: store}))
}

// TestAccessGroupCall: a key (or its team) naming a model access group may
// call every model group whose deployments list it, and gets LiteLLM's
// 403 for any other.
func TestAccessGroupCall(t *testing.T) {
	f := accessGroupsFixture(t)
	for _, tt := range []struct {
		key, model string
		status     int
	}{
		{"sk-beta", "beta-a", 200},
		{"sk-beta", "beta-b", 200},
		{"sk-beta", "other", 403},
		{"sk-team-beta", "beta-b", 200},
		{"sk-team-beta", "other", 403},
		{"sk-team-other", "beta-a", 403},
	} {
		resp := f.post(t, "/v1/chat/completions", tt.key, `{"model":"`+tt.model+`","messages":[{"role":"user","content":"hi"}]}`)
		body := gatewaytest.ReadAll(t, resp.Body)
		if resp.StatusCode != tt.status {
			t.Fatalf("%s -> %s: status %d, want %d: %s", tt.key, tt.model, resp.StatusCode, tt.status, body)
		}
		if tt.status == 403 && tt.key == "sk-beta" {
			want := "key not allowed to access model. This key can only access models=['beta-models']. Tried to access other"
			if !strings.Contains(body, want) {
				t.Fatalf("403 body %s, want LiteLLM's message %q", body, want)
			}
		}
	}
}

// TestModelsAccessGroupFilters: /v1/models lists what a key may call
// through its access groups, and LiteLLM's filters: access group names
// (include_, only_model_access_groups), wildcard routes, a team's view.
func TestModelsAccessGroupFilters(t *testing.T) {
	f := accessGroupsFixture(t)
	ids := func(key, query string) (int, string) {
		t.Helper()
		var out struct{ Data []struct{ ID string } }
		status := f.get(t, "/v1/models"+query, key, &out)
		var names []string
		for _, m := range out.Data {
			names = append(names, m.ID)
		}
		return status, strings.Join(names, ",")
	}
	for _, tt := range []struct {
		key, query string
		status     int
		want       string
	}{
		{"sk-beta", "", 200, "beta-a,beta-b"},
		{"sk-beta", "?include_model_access_groups=true", 200, "beta-models,beta-a,beta-b"},
		{"sk-beta", "?only_model_access_groups=true", 200, "beta-models"},
		{"sk-all", "?only_model_access_groups=true", 200, "beta-models,extra,wild"},
		{"sk-all", "", 200, "beta-a,beta-b,other"},
		{"sk-all", "?return_wildcard_routes=true", 200, "beta-a,beta-b,other,openai/*"},
		{"sk-beta", "?return_wildcard_routes=true", 200, "beta-a,beta-b"},
		{"sk-master", "?team_id=t-beta", 200, "beta-a,beta-b"},
		{"sk-team-other", "?team_id=t-other", 200, "other"},
		{"sk-team-other", "?team_id=t-beta", 403, ""},
		{"sk-master", "?team_id=nope", 404, ""},
		{"sk-beta", "?include_model_access_groups=maybe", 400, ""},
	} {
		status, got := ids(tt.key, tt.query)
		if status != tt.status || got != tt.want {
			t.Errorf("%s /v1/models%s: %d %q, want %d %q", tt.key, tt.query, status, got, tt.status, tt.want)
		}
	}
}
