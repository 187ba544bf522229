package adminapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/adminapi"
	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// TestOrgSpendReports: the spend routes filter by organization_id, and an
// org_admin reads its own organization's spend (every user's) and no
// other's.
func TestOrgSpendReports(t *testing.T) {
	ctx := context.Background()
	ks := keys.NewMemory()
	sp := spend.NewMemory(ks)
	now := time.Now().UTC()
	h := adminapi.New(adminapi.Options{MasterKey: masterKey, Keys: ks, Spend: sp, Now: func() time.Time { return now }})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"boss", "worker", "stranger"} {
		must(ks.CreateUser(ctx, keys.User{ID: u, Role: keys.RoleInternalUser}))
		must(ks.CreateKey(ctx, keys.Key{Hash: keys.HashSecret("sk-" + u), UserID: u}))
	}
	for _, o := range []string{"o1", "o2"} {
		must(ks.CreateOrganization(ctx, keys.Organization{ID: o}))
		must(ks.CreateTeam(ctx, keys.Team{ID: "team-" + o, OrganizationID: o}))
	}
	must(ks.AddMember(ctx, keys.Member{Group: keys.KindOrg, GroupID: "o1", UserID: "boss", Role: keys.OrgAdmin}))
	ev := func(id, user, org string, nanos int64) spend.Event {
		return spend.Event{Version: spend.VersionOrg, RequestID: id, Start: now.Add(-time.Second), End: now, Status: spend.StatusSuccess,
			KeyHash: keys.HashSecret("sk-key-" + id), UserID: user, TeamID: "team-" + org, OrganizationID: org, ModelGroup: "gpt-4o",
			Provider: "openai", Model: "gpt-4o", CallType: "chat", PromptTokens: 10, CompletionTokens: 5, Cost: nanos, CostKnown: true}
	}
	_, err := sp.Record(ctx, []spend.Event{ev("r1", "worker", "o1", 1_000_000_000), ev("r2", "stranger", "o1", 2_000_000_000), ev("r3", "stranger", "o2", 4_000_000_000)})
	must(err)
	do := func(secret, path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("Authorization", "Bearer "+secret)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	get := func(secret, path string, out any) {
		t.Helper()
		w := do(secret, path)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		must(json.Unmarshal(w.Body.Bytes(), out))
	}
	ids := func(logs []map[string]any) string {
		var out []string
		for _, l := range logs {
			out = append(out, l["request_id"].(string)+"@"+l["organization_id"].(string))
		}
		return strings.Join(out, ",")
	}

	var logs []map[string]any
	get(masterKey, "/spend/logs?organization_id=o2", &logs)
	if got := ids(logs); got != "r3@o2" {
		t.Errorf("master, organization o2: logs %s", got)
	}
	get("sk-boss", "/spend/logs?organization_id=o1", &logs)
	if got := ids(logs); got != "r1@o1,r2@o1" && got != "r2@o1,r1@o1" {
		t.Errorf("org_admin of o1: logs %s, want every user's of o1", got)
	}
	// Not its organization: its own spend only (none there).
	get("sk-boss", "/spend/logs?organization_id=o2", &logs)
	if len(logs) != 0 {
		t.Errorf("org_admin of o1 reading o2: logs %s, want none", ids(logs))
	}
	// A member that is no org_admin: its own, within the organization.
	get("sk-stranger", "/spend/logs?organization_id=o1", &logs)
	if got := ids(logs); got != "r2@o1" {
		t.Errorf("a user reading o1: logs %s, want its own", got)
	}

	var report []map[string]any
	get("sk-boss", "/global/spend/report?organization_id=o1&group_by=team", &report)
	if b, _ := json.Marshal(report); !strings.Contains(string(b), `"team_id":"team-o1"`) || strings.Contains(string(b), "team-o2") || !strings.Contains(string(b), `"total_spend":3`) {
		t.Errorf("org_admin's report of o1: %s", b)
	}
	get(masterKey, "/global/spend/report?organization_id=o2&group_by=api_key", &report)
	if b, _ := json.Marshal(report); !strings.Contains(string(b), `"total_spend":4`) || strings.Contains(string(b), `"total_spend":1`) {
		t.Errorf("master's report of o2: %s", b)
	}
	for _, path := range []string{"/global/spend/report?organization_id=o2", "/global/spend/report", "/organization/daily/activity?organization_ids=o2", "/organization/daily/activity"} {
		if w := do("sk-boss", path); w.Code != 403 {
			t.Errorf("org_admin of o1: %s = %d, want 403: %s", path, w.Code, w.Body)
		}
	}
	if w := do(masterKey, "/global/spend/report?organization_id=o1&group_by=customer"); w.Code != 400 {
		t.Errorf("customer report narrowed to an organization: %d, want 400", w.Code)
	}

	var act struct {
		Results []struct {
			Breakdown struct {
				Entities map[string]any `json:"entities"`
			} `json:"breakdown"`
		} `json:"results"`
		Metadata struct {
			TotalSpend float64 `json:"total_spend"`
		} `json:"metadata"`
	}
	get("sk-boss", "/organization/daily/activity?organization_ids=o1", &act)
	if act.Metadata.TotalSpend != 3 || len(act.Results) != 1 || len(act.Results[0].Breakdown.Entities) != 1 || act.Results[0].Breakdown.Entities["o1"] == nil {
		t.Errorf("org_admin's daily activity of o1: %+v", act)
	}
	get(masterKey, "/organization/daily/activity", &act)
	if act.Metadata.TotalSpend != 7 || len(act.Results[0].Breakdown.Entities) != 2 {
		t.Errorf("master's daily activity of every organization: %+v", act)
	}
}

// TestMemberSpend: a team member's calls through its team key add to its
// membership, shown in /team/info's team_memberships (LiteLLM's shape),
// and its max_budget_in_team refuses its next call once spent; the
// member's key for another team is not bounded by it.
func TestMemberSpend(t *testing.T) {
	const m = "sk-master-test"
	onStoresWith(t, pricedConfig, func(t *testing.T, gw *app.Gateway, c client) {
		c.must(m, "POST", "/team/new", `{"team_id":"tm"}`)
		c.must(m, "POST", "/team/new", `{"team_id":"other"}`)
		c.must(m, "POST", "/team/member_add", `{"team_id":"tm","member":{"user_id":"mu","role":"user"},"max_budget_in_team":0.000001}`)
		k := c.must(m, "POST", "/key/generate", `{"team_id":"tm","user_id":"mu"}`)["key"].(string)
		o := c.must(m, "POST", "/key/generate", `{"team_id":"other","user_id":"mu"}`)["key"].(string)
		chat := func(key string) int {
			code, _, _ := c.call(key, "POST", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
			return code
		}
		if code := chat(k); code != 200 {
			t.Fatalf("first call: %d", code)
		}
		gw.FlushSpend(context.Background())
		info := c.must(m, "GET", "/team/info?team_id=tm", "")
		ms := info["team_memberships"].([]any)
		if len(ms) != 1 {
			t.Fatalf("team_memberships = %v", ms)
		}
		mb := ms[0].(map[string]any)
		if sp, _ := mb["spend"].(float64); mb["user_id"] != "mu" || sp <= 0 || mb["litellm_budget_table"].(map[string]any)["max_budget"] != 0.000001 {
			t.Fatalf("membership after a call = %v", mb)
		}
		if code := chat(k); code != 400 {
			t.Fatalf("a call past max_budget_in_team: %d, want 400", code)
		}
		if code := chat(o); code != 200 {
			t.Fatalf("the member's key of another team: %d, want 200", code)
		}
	})
}
