package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/providers/bedrock/bedrocktest"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// /v1/images/generations on Bedrock image models (fake Bedrock runtime):
// n images as b64_json, billed n x the model's per-image price; the key's
// model access and unknown models as on every route; a chat model on
// Bedrock keeps its 400; Bedrock's throttling is a 429.
func TestImagesBedrock(t *testing.T) {
	fake := bedrocktest.New("img")
	t.Cleanup(fake.Close)
	creds := `api_base: "` + fake.URL + `", aws_region_name: us-west-2, aws_access_key_id: AKIDFAKE, aws_secret_access_key: fake`
	cfg := loadConfig(t, `model_list:
  - model_name: canvas
    litellm_params: {model: bedrock/amazon.nova-canvas-v1:0, `+creds+`}
  - model_name: sd3
    litellm_params: {model: bedrock/stability.sd3-large-v1:0, `+creds+`}
  - model_name: claude
    litellm_params: {model: bedrock/anthropic.claude-3-haiku-20240307-v1:0, `+creds+`}
general_settings: {master_key: sk-master}
`)
	ks := keys.NewMemory()
	for _, k := range []keys.Key{
		{Hash: keys.HashSecret("sk-all")},
		{Hash: keys.HashSecret("sk-sd3"), Settings: keys.Settings{Models: []string{"sd3"}}},
	} {
		if err := ks.CreateKey(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	quiet := gatewaytest.Quiet()
	done := make(chan *Completion, 16)
	h := New(Options{
		Config: cfg, Router: router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: quiet, Sleep: noWait}),
		Provider: providers.New(providers.NewHTTPClient()), Keys: ks, Limits: limits.NewMemory(), Logger: quiet,
		OnComplete: func(_ context.Context, c *Completion) { done <- c },
	})
	post := func(key, body string) (int, string, *Completion) {
		t.Helper()
		rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/images/generations", key, body))
		return rec.Code, rec.Body.String(), <-done
	}

	code, out, c := post("sk-all", `{"model":"canvas","prompt":"a cat","n":3,"size":"1024x1024"}`)
	data := gjson.Get(out, "data").Array()
	if code != 200 || len(data) != 3 || data[2].Get("b64_json").Str != bedrocktest.FakeImages(3)[2] {
		t.Fatalf("canvas: %d %s", code, out)
	}
	if c.Operation != wire.OpImages || !c.CostKnown || c.CostNanos != 3*40_000_000 {
		t.Errorf("canvas cost %d known %v, want 3 x $0.04", c.CostNanos, c.CostKnown)
	}
	calls := fake.Calls()
	if len(calls) != 1 || calls[0].ModelID != "amazon.nova-canvas-v1:0" || gjson.Get(calls[0].Body, "imageGenerationConfig.numberOfImages").Int() != 3 {
		t.Fatalf("Bedrock calls %+v", calls)
	}

	code, out, c = post("sk-sd3", `{"model":"sd3","prompt":"a fox"}`)
	if code != 200 || len(gjson.Get(out, "data").Array()) != 1 || !c.CostKnown || c.CostNanos != 80_000_000 {
		t.Errorf("sd3: %d %s, cost %d known %v, want $0.08", code, out, c.CostNanos, c.CostKnown)
	}

	for _, tc := range []struct {
		key, body string
		status    int
		want      string
	}{
		{"sk-sd3", `{"model":"canvas","prompt":"a cat"}`, 403, "model_not_allowed"}, // not among the key's models
		{"sk-all", `{"model":"nope","prompt":"a cat"}`, 404, "model_not_found"},     // no such model group
		{"sk-all", `{"model":"claude","prompt":"a cat"}`, 400, "does not serve /images/generations"},
		{"sk-all", `{"model":"canvas","prompt":"a cat","response_format":"url"}`, 400, "b64_json"},
	} {
		code, out, _ := post(tc.key, tc.body)
		if code != tc.status || !strings.Contains(out, tc.want) {
			t.Errorf("%s %s: %d %s, want %d with %q", tc.key, tc.body, code, out, tc.status, tc.want)
		}
	}
	if n := len(fake.Calls()); n != 2 {
		t.Errorf("%d Bedrock calls, want 2 (refusals call nothing)", n)
	}

	fake.SetFault(bedrocktest.Throttle)
	code, out, _ = post("sk-all", `{"model":"canvas","prompt":"a cat"}`)
	if code != http.StatusTooManyRequests {
		t.Errorf("throttled: %d %s, want 429", code, out)
	}
}
