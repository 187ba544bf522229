package adminapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/adminapi"
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
	if err := ks.CreateUser(ctx, keys.User{ID: "internal_user", Role: keys.RoleInternalUser}); err != nil {
		t.Fatal(err)
	}
	fx.secrets["internal_user"] = "sk-spend-internal"
	if err := ks.CreateTeam(ctx, keys.Team{ID: "t1", Alias: "Research"}); err != nil {
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
