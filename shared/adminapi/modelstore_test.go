package adminapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/adminapi"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/models"
)

const catalogBase = `
model_list:
  - model_name: gpt
    litellm_params: {model: openai/gpt-4o, api_key: sk-config-secret}
    model_info: {id: cfg-1}
general_settings:
  store_model_in_db: true
`

// newCatalog is a model store in memory with its live view, as app wires
// it: a write reloads the view.
func newCatalog(t *testing.T, base string) *models.Catalog {
	t.Helper()
	sealer, err := models.NewSealer("salt-for-tests")
	if err != nil {
		t.Fatal(err)
	}
	store := models.NewMemory()
	build := func(_ context.Context, recs []models.Record, _ *config.Config) (*config.Config, error) {
		return models.LoadConfig([]byte(base), nil, sealer, recs)
	}
	live, err := models.NewLive(context.Background(), store, build, models.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &models.Catalog{Store: store, Sealer: sealer, Base: []byte(base), View: live.Current, Reload: live.Reload}
}

func newModelAdmin(t *testing.T) (http.Handler, *models.Catalog) {
	cat := newCatalog(t, catalogBase)
	h := adminapi.New(adminapi.Options{MasterKey: masterKey, Keys: keys.NewMemory(), Models: cat})
	return h, cat
}

// call is client.call as the master key.
func call(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	code, out, _ := client{t, h}.call(masterKey, method, path, body)
	return code, out
}

func TestModelNewUpdateDelete(t *testing.T) {
	h, cat := newModelAdmin(t)
	code, out := call(t, h, "POST", "/model/new", `{"model_name":"claude","litellm_params":{"model":"anthropic/claude-x","api_key":"sk-stored-secret","rpm":5},"model_info":{"id":"db-1","access_groups":["ag"]}}`)
	if code != 200 || out["model_id"] != "db-1" || out["model_info"].(map[string]any)["db_model"] != true {
		t.Fatalf("new: %d %v", code, out)
	}
	if _, shown := out["litellm_params"].(map[string]any)["api_key"]; shown {
		t.Fatalf("the answer shows the key: %v", out)
	}
	rec, err := cat.Store.Get(context.Background(), "db-1")
	if err != nil || rec.Params["api_key"] == "sk-stored-secret" || rec.Params["api_key"] == "" {
		t.Fatalf("stored %v, %v: want the key sealed", rec.Params, err)
	}
	// Listed beside the config's, marked as LiteLLM marks it; no key.
	code, out = call(t, h, "GET", "/model/info", "")
	body, _ := json.Marshal(out)
	if code != 200 || strings.Contains(string(body), "sk-stored-secret") || strings.Contains(string(body), "sk-config-secret") {
		t.Fatalf("info: %d %s", code, body)
	}
	data := out["data"].([]any)
	if len(data) != 2 || data[1].(map[string]any)["model_info"].(map[string]any)["db_model"] != true ||
		data[0].(map[string]any)["model_info"].(map[string]any)["db_model"] != false {
		t.Fatalf("info data %s", body)
	}
	if code, out = call(t, h, "GET", "/v2/model/info?model=claude", ""); code != 200 || out["total_count"] != 1.0 {
		t.Fatalf("v2: %d %v", code, out)
	}

	// Update: a new rpm, the key kept; PATCH: a new key.
	if code, out = call(t, h, "POST", "/model/update", `{"model_info":{"id":"db-1"},"litellm_params":{"rpm":9,"api_key":null}}`); code != 200 {
		t.Fatalf("update: %d %v", code, out)
	}
	d := deployment(t, cat, "db-1")
	if d.RPM != 9 || d.APIKey != "sk-stored-secret" || len(d.AccessGroups) != 1 {
		t.Fatalf("after update: %+v", d)
	}
	if code, out = call(t, h, "PATCH", "/model/db-1/update", `{"litellm_params":{"api_key":"sk-rotated","rpm":null}}`); code != 200 {
		t.Fatalf("patch: %d %v", code, out)
	}
	if d = deployment(t, cat, "db-1"); d.RPM != 0 || d.APIKey != "sk-rotated" {
		t.Fatalf("after patch: %+v", d)
	}
	// The same errors as a config file's.
	code, out = call(t, h, "PATCH", "/model/db-1/update", `{"litellm_params":{"rpm":"lots"}}`)
	if msg := errMsg(out); code != 400 || !strings.HasPrefix(msg, "litellm_params.rpm: ") {
		t.Fatalf("bad rpm: %d %v", code, out)
	}
	// The config wins, and says so.
	code, out = call(t, h, "POST", "/model/update", `{"model_info":{"id":"cfg-1"},"litellm_params":{"rpm":1}}`)
	if code != 400 || !strings.Contains(errMsg(out), `"cfg-1" is in the config file`) {
		t.Fatalf("update of a config model: %d %v", code, out)
	}
	if code, out = call(t, h, "POST", "/model/new", `{"model_name":"gpt","litellm_params":{"model":"openai/x"},"model_info":{"id":"cfg-1"}}`); code != 400 {
		t.Fatalf("new with a config id: %d %v", code, out)
	}
	if code, out = call(t, h, "POST", "/model/new", `{"model_name":"claude","litellm_params":{"model":"anthropic/claude-x"},"model_info":{"id":"db-1"}}`); code != 400 {
		t.Fatalf("second new of db-1: %d %v", code, out)
	}

	if code, out = call(t, h, "POST", "/model/delete", `{"id":"db-1"}`); code != 200 || out["message"] != "Model: db-1 deleted successfully" {
		t.Fatalf("delete: %d %v", code, out)
	}
	if code, _ = call(t, h, "POST", "/model/delete", `{"id":"db-1"}`); code != 400 {
		t.Fatalf("second delete: %d", code)
	}
	if len(cat.View(context.Background()).Deployments) != 1 {
		t.Fatal("deleted deployment still served")
	}
}

func TestModelRoutesOff(t *testing.T) {
	h := adminapi.New(adminapi.Options{MasterKey: masterKey, Keys: keys.NewMemory(), Config: config.Default()})
	code, out := call(t, h, "POST", "/model/new", `{"model_name":"x","litellm_params":{"model":"openai/x"}}`)
	if code != 400 || !strings.Contains(errMsg(out), "store_model_in_db") {
		t.Fatalf("%d %v", code, out)
	}
}

func deployment(t *testing.T, cat *models.Catalog, id string) *config.Deployment {
	t.Helper()
	for _, d := range cat.View(context.Background()).Deployments {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("no deployment %s", id)
	return nil
}

func errMsg(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}
