package adminapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/adminapi"
	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// TestSpendReports: the spend routes read the spend store's queries and
// answer in LiteLLM's shapes; an internal user sees only its own spend.
func TestSpendReports(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	ks := keys.NewMemory()
	sp := spend.NewMemory(ks)
	now := time.Now().UTC()
	h := adminapi.New(adminapi.Options{MasterKey: masterKey, Keys: ks, Spend: sp, Now: func() time.Time { return now }})
	fx.h = h
	if err := ks.Users().Create(ctx, keys.User{ID: "internal_user", Role: keys.RoleInternalUser}); err != nil {
		t.Fatal(err)
	}
	fx.secrets["internal_user"] = "sk-spend-internal"
	if err := ks.Teams().Create(ctx, keys.Team{ID: "t1", Alias: "Research"}); err != nil {
		t.Fatal(err)
	}
	if err := ks.CreateKey(ctx, keys.Key{Hash: keys.HashSecret("sk-spend-internal"), UserID: "internal_user"}); err != nil {
		t.Fatal(err)
	}
	ev := func(id, user, team, endUser string, nanos int64) spend.Event {
		return spend.Event{Version: spend.Version, RequestID: id, Start: now.Add(-time.Second), End: now, Status: spend.StatusSuccess,
			KeyHash: keys.HashSecret("sk-spend-" + user), UserID: user, TeamID: team, EndUser: endUser, ModelGroup: "gpt-4o",
			Provider: "openai", Model: "gpt-4o", CallType: "chat", PromptTokens: 10, CompletionTokens: 5, Cost: nanos, CostKnown: true}
	}
	if _, err := sp.Record(ctx, []spend.Event{ev("r1", "internal_user", "t1", "acme", 1_500_000_000), ev("r2", "other", "t2", "", 500_000_000)}); err != nil {
		t.Fatal(err)
	}
	get := func(role, path string) string {
		w := fx.do(role, "GET", path, "")
		if w.Code != 200 {
			t.Fatalf("%s %s: %d %s", role, path, w.Code, w.Body)
		}
		return w.Body.String()
	}
	var logs []map[string]any
	_ = json.Unmarshal([]byte(get("master", "/spend/logs?api_key=sk-spend-internal_user")), &logs)
	if len(logs) != 1 || logs[0]["request_id"] != "r1" || logs[0]["spend"] != 1.5 || logs[0]["total_tokens"] != 15.0 {
		t.Fatalf("spend/logs = %v", logs)
	}
	// Teams by alias, where LiteLLM names them (its spend log's metadata, the
	// report's team_name, the team activity's entity metadata).
	if md := logs[0]["metadata"].(map[string]any); md["user_api_key_team_alias"] != "Research" {
		t.Fatalf("spend/logs metadata = %v", md)
	}
	_ = json.Unmarshal([]byte(get("internal_user", "/spend/logs")), &logs)
	if len(logs) != 1 || logs[0]["user"] != "internal_user" {
		t.Fatalf("an internal user's spend/logs = %v", logs)
	}
	if w := fx.do("internal_user", "GET", "/spend/logs?user_id=other", ""); w.Code != 403 {
		t.Fatalf("another user's spend: %d", w.Code)
	}
	report := get("master", "/global/spend/report?group_by=team")
	if !strings.Contains(report, `"team_name":"Research"`) || !strings.Contains(report, `"team_name":"t2"`) || !strings.Contains(report, `"team_id":"t1"`) || !strings.Contains(report, `"total_spend":1.5`) || !strings.Contains(report, `"group_by_day"`) {
		t.Fatalf("global/spend/report = %s", report)
	}
	if r := get("master", "/global/spend/report?group_by=customer"); !strings.Contains(r, `"customer":"acme"`) {
		t.Fatalf("report by customer = %s", r)
	}
	if w := fx.do("master", "GET", "/global/spend/report?group_by=model", ""); w.Code != 400 {
		t.Fatalf("group_by=model: %d", w.Code)
	}
	var act struct {
		Results []struct {
			Date      string                    `json:"date"`
			Metrics   map[string]float64        `json:"metrics"`
			Breakdown map[string]map[string]any `json:"breakdown"`
		} `json:"results"`
		Metadata map[string]any `json:"metadata"`
	}
	_ = json.Unmarshal([]byte(get("internal_user", "/user/daily/activity")), &act)
	if len(act.Results) != 1 || act.Results[0].Metrics["spend"] != 1.5 || act.Results[0].Breakdown["models"]["gpt-4o"] == nil || act.Metadata["total_spend"] != 1.5 {
		t.Fatalf("user/daily/activity = %+v", act)
	}
	_ = json.Unmarshal([]byte(get("master", "/team/daily/activity?team_ids=t1,t2")), &act)
	if len(act.Results) != 1 || act.Results[0].Metrics["spend"] != 2 || len(act.Results[0].Breakdown["entities"]) != 2 {
		t.Fatalf("team/daily/activity = %+v", act)
	}
	if md := act.Results[0].Breakdown["entities"]["t1"].(map[string]any)["metadata"].(map[string]any); md["team_alias"] != "Research" {
		t.Fatalf("team/daily/activity entity t1 metadata = %v", md)
	}
}

// TestSpendLogFilters: /spend/logs narrows by team_id, model (group or
// model) and status_filter, as LiteLLM's /spend/logs/ui; a status_filter
// other than success or failure is a 400 naming it. And
// /user/daily/activity breaks down by user in "entities", as LiteLLM's.
// On both stores.
func TestSpendLogFilters(t *testing.T) {
	onStoresWith(t, suiteConfig, func(t *testing.T, gw *app.Gateway, c client) {
		const m = "sk-master-test"
		now := time.Now().UTC()
		tag := t.Name() + "-"
		ev := func(id, user, team, group string, st spend.Status) spend.Event {
			return spend.Event{Version: spend.Version, RequestID: tag + id, Start: now.Add(-time.Second), End: now, Status: st,
				KeyHash: keys.HashSecret("sk-f-" + user), UserID: user, TeamID: team, ModelGroup: group, Provider: "openai",
				Model: group + "-2024", CallType: "chat", PromptTokens: 3, CompletionTokens: 2, Cost: 1_000_000, CostKnown: true}
		}
		if _, err := gw.Spend.Record(context.Background(), []spend.Event{
			ev("f1", "ann", "t1", "gpt-4o", spend.StatusSuccess),
			ev("f2", "bob", "t2", "claude", spend.StatusFailure),
			ev("f3", "bob", "t1", "claude", spend.StatusDisconnected),
		}); err != nil {
			t.Fatal(err)
		}
		for _, q := range []struct {
			query string
			want  []string
		}{
			{"team_id=t1", []string{"f1", "f3"}},
			{"model=claude", []string{"f2", "f3"}},
			{"model=gpt-4o-2024", []string{"f1"}},
			{"status_filter=success", []string{"f1"}},
			{"status_filter=failure", []string{"f2", "f3"}},
			{"team_id=t1&model=claude&status_filter=failure", []string{"f3"}},
			{"team_id=t9", []string{}},
		} {
			out := c.must(m, "GET", "/spend/logs?page=1&page_size=100&"+q.query, "")
			var got []string
			for _, row := range out["data"].([]any) {
				got = append(got, row.(map[string]any)["request_id"].(string)[len(tag):])
			}
			slices.Sort(got)
			if !slices.Equal(got, q.want) && !(len(got) == 0 && len(q.want) == 0) {
				t.Errorf("%s: %v, want %v", q.query, got, q.want)
			}
		}
		c.errParam(m, "GET", "/spend/logs?status_filter=ok", "", 400, "status_filter")

		act := c.must(m, "GET", "/user/daily/activity", "")
		results := act["results"].([]any)
		if len(results) != 1 {
			t.Fatalf("user/daily/activity: %v", act)
		}
		ent, _ := results[0].(map[string]any)["breakdown"].(map[string]any)["entities"].(map[string]any)
		reqs := func(user string) any {
			e, _ := ent[user].(map[string]any)
			mt, _ := e["metrics"].(map[string]any)
			return mt["api_requests"]
		}
		if len(ent) != 2 || reqs("ann") != 1.0 || reqs("bob") != 2.0 {
			t.Errorf("user/daily/activity entities = %v, want ann with 1 request and bob with 2", ent)
		}
	})
}

// TestSpendLogPages: GET /spend/logs with page/page_size answers
// LiteLLM's paged object and reaches every log exactly once; without them
// it keeps the bare list, cut at spend.DefaultLogLimit, with the total in
// X-Total-Count. Bad paging is a 400 naming the parameter. On both stores.
func TestSpendLogPages(t *testing.T) {
	const n = 1100
	onStoresWith(t, suiteConfig, func(t *testing.T, gw *app.Gateway, c client) {
		now := time.Now().UTC()
		evs := make([]spend.Event, n)
		for i := range evs {
			evs[i] = spend.Event{Version: spend.Version, RequestID: fmt.Sprintf("%s-page-%04d", t.Name(), i),
				Start: now.Add(-time.Minute), End: now.Add(-time.Duration(i%7) * time.Second), Status: spend.StatusSuccess,
				ModelGroup: "gpt-4o", Provider: "openai", Model: "gpt-4o", CallType: "chat", PromptTokens: 1, CompletionTokens: 1, Cost: 1, CostKnown: true}
		}
		if res, err := gw.Spend.Record(context.Background(), evs); err != nil || res.Recorded != n {
			t.Fatalf("Record: %+v, %v", res, err)
		}
		const m = "sk-master-test"

		// Unpaged: LiteLLM's bare list, cut, and the total says so.
		w := gatewaytest.Do(gw.HTTP, gatewaytest.Request("GET", "/spend/logs", m, ""))
		var list []map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || w.Code != 200 || len(list) != spend.DefaultLogLimit {
			t.Fatalf("unpaged: %d, %d rows, %v", w.Code, len(list), err)
		}
		if got := w.Header().Get("X-Total-Count"); got != fmt.Sprint(n) {
			t.Fatalf("X-Total-Count %q, want %d", got, n)
		}

		// Paged: every log once, LiteLLM's fields.
		for _, size := range []int{1000, 300} {
			seen := map[string]bool{}
			pages := (n + size - 1) / size
			for page := 1; page <= pages+1; page++ {
				out := c.must(m, "GET", fmt.Sprintf("/spend/logs?page=%d&page_size=%d", page, size), "")
				data, _ := out["data"].([]any)
				want := max(0, min(size, n-(page-1)*size))
				if len(data) != want || out["total"] != float64(n) || out["page"] != float64(page) ||
					out["page_size"] != float64(size) || out["total_pages"] != float64(pages) {
					t.Fatalf("page %d of size %d: %d rows, %v; want %d rows, total %d, %d pages", page, size, len(data), without(out, "data"), want, n, pages)
				}
				for _, row := range data {
					id := row.(map[string]any)["request_id"].(string)
					if seen[id] {
						t.Fatalf("size %d: %s on two pages", size, id)
					}
					seen[id] = true
				}
			}
			if len(seen) != n {
				t.Fatalf("size %d: %d distinct logs, want %d", size, len(seen), n)
			}
		}
		if out := c.must(m, "GET", "/spend/logs?page=2", ""); len(out["data"].([]any)) != 50 || out["page_size"] != 50.0 {
			t.Errorf("page without page_size: %v, want LiteLLM's default of 50", without(out, "data"))
		}

		for _, bad := range []struct{ query, param string }{
			{"page_size=1001", "page_size"},
			{"page_size=0", "page_size"},
			{"page_size=-5", "page_size"},
			{"page_size=NaN", "page_size"},
			{"page=0", "page"},
			{"page=-1", "page"},
			{"page=NaN", "page"},
			{"page=1.5", "page"},
			{"page=1000001", "page"},
			{"page=99999999999999999999&page_size=1000", "page"},
		} {
			c.errParam(m, "GET", "/spend/logs?"+bad.query, "", 400, bad.param)
		}
	})
}

func without(m map[string]any, k string) map[string]any {
	out := map[string]any{}
	for kk, v := range m {
		if kk != k {
			out[kk] = v
		}
	}
	return out
}

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
		must(ks.Users().Create(ctx, keys.User{ID: u, Role: keys.RoleInternalUser}))
		must(ks.CreateKey(ctx, keys.Key{Hash: keys.HashSecret("sk-" + u), UserID: u}))
	}
	for _, o := range []string{"o1", "o2"} {
		must(ks.Organizations().Create(ctx, keys.Organization{ID: o}))
		must(ks.Teams().Create(ctx, keys.Team{ID: "team-" + o, OrganizationID: o}))
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
		return gatewaytest.Do(h, gatewaytest.Request("GET", path, secret, ""))
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
