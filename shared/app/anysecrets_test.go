package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

// A "*" deployment's providers follow a rotated Secrets Manager key as any
// deployment does: its own api_key from a secret, and a provider's
// environment variable (ANTHROPIC_API_KEY) read from one; each variant
// the model name chooses sends the new key after the rotation.
func TestSecretsRotateAnyProvider(t *testing.T) {
	t.Setenv("AWS_REGION", sqslocal.Region)
	t.Setenv("AWS_ACCESS_KEY_ID", "dummy")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "dummy")
	suffix := strings.ToUpper(strings.ReplaceAll(t.Name(), "/", "_"))
	own := sqslocal.NewSecret(t, "ANY_KEY_"+suffix, "sk-any-1")
	primary := sqslocal.NewSecret(t, "sluice/any-", `{"ANTHROPIC_API_KEY":"sk-ant-env-1"}`)
	var a, b keyed
	a.accept("sk-any-1")
	b.accept("sk-ant-env-1")
	yaml := fmt.Sprintf(`general_settings:
  master_key: sk-master
  key_management_system: aws_secret_manager
  key_management_settings: {primary_secret_name: %s, hosted_keys: [%q], access_mode: read_only}
model_list:
  - model_name: "*"
    litellm_params: {model: "*", api_base: %s, api_key: os.environ/%s}
  - model_name: "claude-env-*"
    litellm_params: {model: "*", api_base: %s}
`, primary, own, a.serve(t, "X-Api-Key", "", anthropicBody), own, b.serve(t, "X-Api-Key", "", anthropicBody))
	gw, err := app.Build(context.Background(), app.Settings{
		ConfigYAML: []byte(yaml), Getenv: func(string) (string, bool) { return "", false }, Logger: gatewaytest.Quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	ask := func(model string) int {
		return call(t, gw.HTTP, context.Background(), "sk-master", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`).Code
	}
	for _, m := range []string{"claude-sonnet-4-5", "claude-env-4-5"} {
		if code := ask(m); code != 200 {
			t.Fatalf("%s before the rotation: %d", m, code)
		}
	}
	sqslocal.PutSecret(t, own, "sk-any-2")
	sqslocal.PutSecret(t, primary, `{"ANTHROPIC_API_KEY":"sk-ant-env-2"}`)
	a.accept("sk-any-2")
	b.accept("sk-ant-env-2")
	for _, m := range []string{"claude-sonnet-4-5", "claude-env-4-5"} {
		for i := range 2 {
			if code := ask(m); code != 200 {
				t.Errorf("%s after the rotation, call %d: %d", m, i, code)
			}
		}
	}
	// The first call after the rotation sends the old key and, at its 401,
	// the new one; the second sends the new key at once: the variant holds it.
	for name, k := range map[string]*keyed{"own api_key": &a, "ANTHROPIC_API_KEY": &b} {
		k.mu.Lock()
		if n := len(k.seen); n < 2 || k.seen[n-2] != k.seen[n-1] || !strings.HasSuffix(k.seen[n-1], "-2") {
			t.Errorf("%s: keys sent %q; want the last two the rotated one", name, k.seen)
		}
		k.mu.Unlock()
	}
}
