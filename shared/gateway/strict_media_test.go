package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
)

// Under strict budgets a media call reserves its worst case at media
// prices (n images of the size asked; the characters of a speech input),
// so a budget below it refuses the call before the upstream is paid; a
// transcription, whose duration is unknown before the call, is refused.
func TestStrictMedia(t *testing.T) {
	up := gatewaytest.Answering(t, http.StatusOK, "application/json", `{"created":1,"data":[{"url":"u"}]}`)
	cfg := loadConfig(t, `model_list:
  - model_name: img
    litellm_params: {model: openai/dall-e-3, api_base: `+up.URL+`}
  - model_name: tts
    litellm_params: {model: openai/tts-1, api_base: `+up.URL+`}
  - model_name: stt
    litellm_params: {model: openai/whisper-1, api_base: `+up.URL+`}
general_settings: {master_key: sk-master, strict_budgets: true}
`)
	ks := keys.NewMemory()
	budget := 0.10
	if err := ks.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret("sk-k"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
		t.Fatal(err)
	}
	quiet := gatewaytest.Quiet()
	var holds []*limits.Hold
	h := New(Options{
		Config: cfg, Router: router.New(cfg, router.Options{Cooldowns: cooldown.NewMemory(), Logger: quiet, Sleep: noWait}),
		Provider: providers.New(providers.NewHTTPClient()), Keys: ks, Limits: limits.NewMemory(), Logger: quiet,
		OnComplete: func(_ context.Context, c *Completion) { holds = append(holds, c.Hold) },
	})
	// One standard 1024x1024 dall-e-3 image (~$0.04) fits in $0.10; four do not.
	rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/images/generations", "sk-k", `{"model":"img","prompt":"a cat"}`))
	if rec.Code != 200 || len(holds) != 1 || holds[0] == nil || holds[0].Amount != 39_999_924 {
		t.Fatalf("one image: %d %s, holds %v", rec.Code, rec.Body, holds)
	}
	calls := up.Calls.Load()
	rec = gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/images/generations", "sk-k", `{"model":"img","prompt":"a cat","n":4}`))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "budget_exceeded") || up.Calls.Load() != calls {
		t.Errorf("four images over the budget: %d %s", rec.Code, rec.Body)
	}
	rec = gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/audio/speech", "sk-k", `{"model":"tts","input":"`+strings.Repeat("x", 10000)+`","voice":"alloy"}`))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "budget_exceeded") { // 10000 characters: $0.15
		t.Errorf("speech over the budget: %d %s", rec.Code, rec.Body)
	}
	ct, body := multipartBody(t, []byte("audio"), "model", "stt")
	req := gatewaytest.Request(http.MethodPost, "/v1/audio/transcriptions", "sk-k", string(body))
	req.Header.Set("Content-Type", ct)
	rec = gatewaytest.Do(h, req)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "per second of audio") {
		t.Errorf("transcription under strict budgets: %d %s", rec.Code, rec.Body)
	}
}
