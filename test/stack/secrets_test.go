package stack_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// providerSecret is the provider key the whole-stack test keeps in
// Secrets Manager (docs/deploy.md's Day one): the secret, its ARN (the
// ProviderSecretArns parameter) and the key it holds.
type providerSecret struct {
	name, arn, key string
}

// putProviderSecret creates the secret on moto and returns the deploy's
// parameters with ProviderSecretArns naming it, as Day one deploys.
func (s *stack) putProviderSecret(t *testing.T, params map[string]string) map[string]string {
	t.Helper()
	s.secret = providerSecret{name: "sluice/providers-" + randomHex(4), key: "sk-stack-" + randomHex(12)}
	out, err := s.c.sm.CreateSecret(ctx(t), &secretsmanager.CreateSecretInput{
		Name:         aws.String(s.secret.name),
		SecretString: aws.String(fmt.Sprintf(`{"OPENAI_API_KEY":%q}`, s.secret.key)),
	})
	if err != nil {
		t.Fatalf("create secret: %v", err)
	}
	s.secret.arn = aws.ToString(out.ARN)
	t.Cleanup(func() {
		_, _ = s.c.sm.DeleteSecret(ctx(t), &secretsmanager.DeleteSecretInput{SecretId: aws.String(s.secret.arn), ForceDeleteWithoutRecovery: aws.Bool(true)})
	})
	p := maps.Clone(params)
	if p == nil {
		p = map[string]string{}
	}
	p["ProviderSecretArns"] = s.secret.arn
	return p
}

// secretsStory: the deployed gateway, given a config whose key management
// names the secret (key_management_system: aws_secret_manager), calls its
// provider (a fake OpenAI) with exactly the key the secret holds, read
// from moto's Secrets Manager through AWS_ENDPOINT_URL as in LocalStack;
// the key shows in none of its logs; the template grants the gateway
// GetSecretValue on exactly that secret.
func (s *stack) secretsStory(t *testing.T, tl tools, gatewayID string) {
	var mu sync.Mutex
	var seen []string
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"from the provider"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`)
	}))
	defer provider.Close()
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	config := fmt.Sprintf(`general_settings:
  key_management_system: aws_secret_manager
  key_management_settings:
    primary_secret_name: %s
model_list:
  - model_name: secret-gpt
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: %s
      api_key: os.environ/OPENAI_API_KEY
`, s.secret.name, provider.URL)
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	f := s.startFunction(t, tl, gatewayID, "GATEWAY_CONFIG="+cfgPath)
	body := map[string]any{"model": "secret-gpt", "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	r := streamed(t, f.invoke(t, urlEvent(t, "gateway-chat.json", "POST", "/v1/chat/completions", "", s.masterKey(t), body)))
	if r.status != 200 || !strings.Contains(string(r.body), "from the provider") {
		t.Fatalf("chat through the secret's key: %d %s", r.status, truncate(r.body))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "Bearer "+s.secret.key {
		t.Errorf("the provider was sent %q; want exactly the secret's key", seen)
	}
	if strings.Contains(f.logs.String(), s.secret.key) {
		t.Errorf("the gateway logged the secret's key:\n%s", f.logs.String())
	}

	// What moto's IAM does not enforce, the template says: GetSecretValue
	// on exactly the secret, for the gateway's role only.
	if got := s.params["ProviderSecretArns"]; got != s.secret.arn {
		t.Errorf("deployed with ProviderSecretArns %q, want the secret's ARN", got)
	}
	for _, id := range s.resourcesOfType("AWS::IAM::Role") {
		b, err := json.Marshal(at(s.transformed, "Resources", id, "Properties", "Policies"))
		if err != nil {
			t.Fatal(err)
		}
		p := string(b)
		grants := strings.Contains(p, `"secretsmanager:GetSecretValue"`) && strings.Contains(p, `{"Ref":"ProviderSecretArns"}`)
		if gw := id == gatewayID+"Role"; grants != gw || strings.Count(p, "secretsmanager:") != map[bool]int{true: 1, false: 0}[gw] {
			t.Errorf("role %s: secretsmanager grants %s; want GetSecretValue on ProviderSecretArns for the gateway's role alone", id, p)
		}
	}
}
