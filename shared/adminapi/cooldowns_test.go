package adminapi_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/adminapi"
	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/keys"
)

const cooldownConfig = `model_list:
  - model_name: gpt-4o
    litellm_params: {model: mock/gpt-4o, mock_response: "hi"}
    model_info: {id: dep-a}
  - model_name: gpt-4o
    litellm_params: {model: mock/gpt-4o, mock_response: "hi"}
    model_info: {id: dep-b}
  - model_name: gpt-4o-mini
    litellm_params: {model: mock/gpt-4o-mini, mock_response: "hi"}
    model_info: {id: dep-c}
general_settings:
  master_key: sk-master-test
`

// modelInfos returns /model/info's model_info objects by deployment id.
func modelInfos(c client, path string) map[string]map[string]any {
	c.t.Helper()
	out := map[string]map[string]any{}
	for _, d := range c.must("sk-master-test", "GET", path, "")["data"].([]any) {
		info := d.(map[string]any)["model_info"].(map[string]any)
		out[info["id"].(string)] = info
	}
	return out
}

// TestModelInfoCooldowns puts one deployment in cooldown through the shared
// cooldown store the gateway writes (memory and DynamoDB Local): /model/info
// shows it cooling down until the store's time, and the others not.
func TestModelInfoCooldowns(t *testing.T) {
	onStoresWith(t, cooldownConfig, func(t *testing.T, gw *app.Gateway, c client) {
		before := modelInfos(c, "/model/info")
		for id, info := range before {
			if info["cooling_down"] != false || info["cooldown_until"] != nil {
				t.Fatalf("%s before any failure: cooling_down %v, cooldown_until %v", id, info["cooling_down"], info["cooldown_until"])
			}
		}
		f := cooldown.Failure{Deployment: "dep-b", Class: "server_error", At: time.Now(), Immediate: true, Cooldown: 10 * time.Minute}
		until, err := gw.Cooldowns.RecordFailure(context.Background(), f)
		if err != nil || until.IsZero() {
			t.Fatalf("RecordFailure = %v, %v", until, err)
		}
		for _, path := range []string{"/model/info", "/v1/model/info"} {
			got := modelInfos(c, path)
			if len(got) != 3 {
				t.Fatalf("%s: %d deployments, want 3", path, len(got))
			}
			for id, info := range got {
				wantCooling, wantUntil := false, any(nil)
				if id == "dep-b" {
					wantCooling, wantUntil = true, until.UTC().Format(time.RFC3339)
				}
				if info["cooling_down"] != wantCooling || info["cooldown_until"] != wantUntil {
					t.Errorf("%s %s: cooling_down %v, cooldown_until %v; want %v, %v", path, id, info["cooling_down"], info["cooldown_until"], wantCooling, wantUntil)
				}
			}
		}
		// The id filter keeps the field.
		one := modelInfos(c, "/model/info?litellm_model_id=dep-b")
		if len(one) != 1 || one["dep-b"]["cooling_down"] != true {
			t.Errorf("/model/info?litellm_model_id=dep-b = %v", one)
		}
	})
}

// failingCooldowns is a cooldown store that is down.
type failingCooldowns struct{}

func (failingCooldowns) CoolingDown(context.Context, []string, time.Time) (map[string]time.Time, error) {
	return nil, errors.New("store unreachable")
}

// TestModelInfoCooldownStoreDown: when the cooldown store fails,
// /model/info still answers 200, with cooling_down null (unknown, not
// "false"), and logs a warning.
func TestModelInfoCooldownStoreDown(t *testing.T) {
	cfg, err := config.Load([]byte(cooldownConfig), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	lg := &logs{}
	h := adminapi.New(adminapi.Options{MasterKey: "sk-master-test", Keys: keys.NewMemory(), Config: cfg, Cooldowns: failingCooldowns{},
		Logger: slog.New(slog.NewJSONHandler(lg, nil))})
	c := client{t, adminapi.Mux(h, http.NotFoundHandler())}
	got := modelInfos(c, "/model/info")
	if len(got) != 3 {
		t.Fatalf("%d deployments, want 3", len(got))
	}
	for id, info := range got {
		v, present := info["cooling_down"]
		if !present || v != nil || info["cooldown_until"] != nil {
			t.Errorf("%s: cooling_down %v (present %v), cooldown_until %v; want null", id, v, present, info["cooldown_until"])
		}
	}
	if !strings.Contains(lg.String(), "cooldown store failed") {
		t.Errorf("no warning logged:\n%s", lg.String())
	}
}
