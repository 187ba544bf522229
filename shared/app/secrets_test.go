package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

const anthropicBody = `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":1}}`

// keyed is a fake provider that answers only the key in want (read from
// header), and records each key it was sent.
type keyed struct {
	want atomic.Pointer[string]
	mu   sync.Mutex
	seen []string
}

func (k *keyed) serve(t *testing.T, header, prefix, body string) string {
	return gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		got := strings.TrimPrefix(r.Header.Get(header), prefix)
		k.mu.Lock()
		k.seen = append(k.seen, got)
		k.mu.Unlock()
		if got != *k.want.Load() {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"invalid x-api-key","type":"authentication_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}).URL
}

func (k *keyed) accept(key string) { k.want.Store(&key) }

// Local mode against moto: the provider keys and the master key come from
// Secrets Manager (one JSON secret, one hosted key), through the SDK's
// Secrets Manager endpoint variable; each provider gets exactly its key;
// warm requests make no further read; a rotated key is picked up at the
// provider's 401 with one read for many concurrent requests.
func TestSecretsFromSecretsManager(t *testing.T) {
	t.Setenv("AWS_REGION", sqslocal.Region)
	t.Setenv("AWS_ACCESS_KEY_ID", "dummy")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "dummy")
	hostedName := "ANTHROPIC_KEY_" + strings.ToUpper(strings.ReplaceAll(t.Name(), "/", "_"))
	primary := sqslocal.NewSecret(t, "sluice/providers-", `{"OPENAI_API_KEY":"sk-openai-from-sm-1","LITELLM_MASTER_KEY":"sk-master-from-sm"}`)
	hosted := sqslocal.NewSecret(t, hostedName, "sk-ant-from-sm-1")
	var oa, an keyed
	oa.accept("sk-openai-from-sm-1")
	an.accept("sk-ant-from-sm-1")
	yaml := fmt.Sprintf(`general_settings:
  master_key: os.environ/LITELLM_MASTER_KEY
  key_management_system: aws_secret_manager
  key_management_settings:
    primary_secret_name: %s
    hosted_keys: [%q]
    access_mode: read_only
model_list:
  - model_name: gpt
    litellm_params: {model: openai/gpt-4o-mini, api_base: %s, api_key: os.environ/OPENAI_API_KEY}
  - model_name: claude
    litellm_params: {model: anthropic/claude-sonnet-4, api_base: %s, api_key: os.environ/%s}
`, primary, hosted, oa.serve(t, "Authorization", "Bearer ", okBody), an.serve(t, "X-Api-Key", "", anthropicBody), hosted)
	env := map[string]string{"UNRELATED": "x"}
	gw, err := app.Build(context.Background(), app.Settings{
		ConfigYAML: []byte(yaml), Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Logger: gatewaytest.Quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	for _, model := range []string{"gpt", "claude"} {
		rec := call(t, gw.HTTP, context.Background(), "sk-master-from-sm", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", model, rec.Code, rec.Body)
		}
	}
	if rec := call(t, gw.HTTP, context.Background(), "sk-wrong", `{"model":"gpt","messages":[]}`); rec.Code != 401 {
		t.Errorf("a wrong key: %d; the master key from the secret must be enforced", rec.Code)
	}
	if len(oa.seen) != 1 || oa.seen[0] != "sk-openai-from-sm-1" || len(an.seen) != 1 || an.seen[0] != "sk-ant-from-sm-1" {
		t.Fatalf("keys sent: openai %q, anthropic %q", oa.seen, an.seen)
	}
	reads := gw.Secrets.Reads()
	for range 20 {
		call(t, gw.HTTP, context.Background(), "sk-master-from-sm", `{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`)
	}
	if got := gw.Secrets.Reads(); got != reads || reads != 1 {
		t.Errorf("reads: %d at start, %d after 20 warm requests; want 1 and no more", reads, got)
	}

	// Rotation: the secret and the provider move to a new key; the first
	// requests carry the old one, get a 401, and the one re-read they
	// share gives them the new key.
	sqslocal.PutSecret(t, hosted, "sk-ant-from-sm-2")
	an.accept("sk-ant-from-sm-2")
	var wg sync.WaitGroup
	codes := make([]int, 16)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = call(t, gw.HTTP, context.Background(), "sk-master-from-sm", `{"model":"claude","messages":[{"role":"user","content":"hi"}]}`).Code
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("request %d after rotation: %d", i, c)
		}
	}
	if got := gw.Secrets.Reads(); got != 2 {
		t.Errorf("%d reads after the rotation; want 2 (one re-read for %d rejected requests)", got, len(codes))
	}
	an.mu.Lock()
	last := an.seen[len(an.seen)-1]
	an.mu.Unlock()
	if last != "sk-ant-from-sm-2" {
		t.Errorf("last key sent %q; want the rotated one", last)
	}
}

// A secret that cannot be read stops the build: the gateway never starts
// with keys missing (nor open, when the master key is one of them).
func TestSecretsUnreadableStopsBuild(t *testing.T) {
	t.Setenv("AWS_REGION", sqslocal.Region)
	t.Setenv("AWS_ACCESS_KEY_ID", "dummy")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "dummy")
	sqslocal.SecretsManager(t)
	yaml := `general_settings:
  master_key: os.environ/LITELLM_MASTER_KEY
  key_management_system: aws_secret_manager
  key_management_settings: {primary_secret_name: sluice/does-not-exist}
`
	_, err := app.Build(context.Background(), app.Settings{ConfigYAML: []byte(yaml), Logger: gatewaytest.Quiet()})
	if err == nil || !strings.Contains(err.Error(), "sluice/does-not-exist") {
		t.Fatalf("build: %v; want the secret's read error", err)
	}
}
