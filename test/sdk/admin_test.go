package sdk

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestGeneratedKey: a key generated through the admin API on the gateway's
// own port, used by the official SDK: its models answer, others get a 403
// OpenAI error, a wrong key a 401, /v1/models lists only its models, and
// its rpm_limit gives a 429 with Retry-After. The secret is in no log line.
func TestGeneratedKey(t *testing.T) {
	const master = "sk-sdk-admin-master"
	srv := startServerT(t, `
model_list:
  - model_name: gpt-4o-mini
    litellm_params: {model: mock/gpt-4o-mini}
  - model_name: gpt-4o
    litellm_params: {model: mock/gpt-4o}
  - model_name: o3
    litellm_params: {model: mock/o3}
general_settings:
  master_key: `+master+`
`)
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, srv.base+"/key/generate",
		strings.NewReader(`{"models":["gpt-4o-mini","gpt-4o"],"rpm_limit":3,"key_alias":"sdk"}`))
	req.Header.Set("Authorization", "Bearer "+master)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var gen struct {
		Key string `json:"key"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &gen) != nil || !strings.HasPrefix(gen.Key, "sk-") {
		t.Fatalf("key/generate: %d %s", resp.StatusCode, body)
	}
	client := newClient(srv, option.WithAPIKey(gen.Key))
	ctx := testContext(t)

	models, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"gpt-4o", "gpt-4o-mini"}) {
		t.Fatalf("/v1/models lists %v, want only the key's models", ids)
	}

	if _, err := client.Chat.Completions.New(ctx, chatParams("gpt-4o-mini")); err != nil {
		t.Fatalf("allowed model: %v", err)
	}
	apiErr := func(err error) *openai.Error {
		t.Helper()
		var e *openai.Error
		if !errors.As(err, &e) {
			t.Fatalf("err = %v (%T), want *openai.Error", err, err)
		}
		return e
	}
	e := apiErr(func() error { _, err := client.Chat.Completions.New(ctx, chatParams("o3")); return err }())
	if e.StatusCode != 403 || e.Type != "permission_error" || !strings.Contains(e.Message, "o3") {
		t.Errorf("model the key may not use: %d %s", e.StatusCode, e.RawJSON())
	}
	bad := newClient(srv, option.WithAPIKey(gen.Key+"x"))
	e = apiErr(func() error { _, err := bad.Chat.Completions.New(ctx, chatParams("gpt-4o-mini")); return err }())
	if e.StatusCode != 401 || e.Type != "authentication_error" {
		t.Errorf("wrong key: %d %s", e.StatusCode, e.RawJSON())
	}

	// rpm_limit 3: one used above; the third request after it is refused.
	var last error
	for range 3 {
		if _, last = client.Chat.Completions.New(ctx, chatParams("gpt-4o")); last != nil {
			break
		}
	}
	e = apiErr(last)
	if e.StatusCode != 429 || e.Type != "rate_limit_error" || e.Response.Header.Get("Retry-After") == "" {
		t.Errorf("over rpm_limit: %d %s (Retry-After %q)", e.StatusCode, e.RawJSON(), e.Response.Header.Get("Retry-After"))
	}
	if strings.Contains(srv.log.String(), gen.Key) {
		t.Error("the generated secret appears in the gateway's log")
	}
}
