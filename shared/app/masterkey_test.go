package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
)

// A LiteLLM config whose master_key names a variable the deployment does
// not set (os.environ/LITELLM_MASTER_KEY) still starts when the key comes
// from GATEWAY_MASTER_KEY, and the key is then required: never an open
// gateway.
func TestConfigMasterKeyFromOverride(t *testing.T) {
	up, _ := upstream(t, 200)
	yaml := fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/m, api_base: %s, api_key: k}
general_settings:
  master_key: os.environ/SLUICE_TEST_UNSET_MASTER_KEY
`, up.URL)
	env := map[string]string{"GATEWAY_MASTER_KEY": "sk-from-env"}
	gw, err := app.Build(context.Background(), app.Settings{
		ConfigYAML: []byte(yaml), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv:    func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		MasterKey: env["GATEWAY_MASTER_KEY"], // as the functions' main sets it
	})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for key, want := range map[string]int{"": 401, "sk-wrong": 401, "sk-from-env": 200} {
		if rec := call(t, gw.Handler, context.Background(), key, body); rec.Code != want {
			t.Errorf("key %q: %d, want %d: %s", key, rec.Code, want, rec.Body)
		}
	}
}
