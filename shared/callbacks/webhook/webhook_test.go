package webhook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/callbacks"
	"github.com/sluice-gw/sluice/shared/callbacks/callbackstest"
	"github.com/sluice-gw/sluice/shared/callbacks/webhook"
	"github.com/sluice-gw/sluice/shared/spend"
)

// TestWebhookBatch posts one JSON array of StandardLoggingPayloads per
// batch with GENERIC_LOGGER_HEADERS; a 5xx is retried, a 400 is not.
func TestWebhookBatch(t *testing.T) {
	f := callbackstest.NewWebhook(t)
	s, err := webhook.New(context.Background(), callbackstest.Env(map[string]string{
		"GENERIC_LOGGER_ENDPOINT": f.URL + "/logs", "GENERIC_LOGGER_HEADERS": "Authorization=Bearer tok-1, X-Team=a",
	}))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	recs := []callbacks.Record{
		{CallID: "a", Start: now, End: now, Status: spend.StatusSuccess, CostNanos: 5_000, CostKnown: true, PromptTokens: 3},
		{CallID: "b", Start: now, End: now, Status: spend.StatusFailure, StatusCode: 500, Error: "boom"},
	}
	if err := s.Send(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	if f.Posts != 1 || f.Headers[0].Get("Authorization") != "Bearer tok-1" || f.Headers[0].Get("X-Team") != "a" {
		t.Fatalf("posts %d, headers %v", f.Posts, f.Headers)
	}
	if p := f.Payload("a"); p == nil || p["response_cost"] != 5e-6 || p["prompt_tokens"] != 3.0 || p["status"] != "success" {
		t.Errorf("payload a = %v", p)
	}
	if p := f.Payload("b"); p == nil || p["status"] != "failure" || p["error_str"] != "boom" {
		t.Errorf("payload b = %v", p)
	}
	f.SetDown(503)
	if err := s.Send(context.Background(), recs); err == nil || callbacks.IsPermanent(err) {
		t.Errorf("503: %v", err)
	}
	f.SetDown(400)
	if err := s.Send(context.Background(), recs); !callbacks.IsPermanent(err) {
		t.Errorf("400: %v", err)
	}
}

// TestWebhookSettings: the endpoint is required and an http(s) URL; an
// error never shows it (it may carry a token).
func TestWebhookSettings(t *testing.T) {
	if _, err := webhook.New(context.Background(), callbackstest.Env(nil)); err == nil {
		t.Error("no endpoint: no error")
	}
	_, err := webhook.New(context.Background(), callbackstest.Env(map[string]string{"GENERIC_LOGGER_ENDPOINT": "ftp://x/?token=secret-tok"}))
	if err == nil || strings.Contains(err.Error(), "secret-tok") {
		t.Errorf("bad endpoint: %v", err)
	}
	if _, err := webhook.New(context.Background(), callbackstest.Env(map[string]string{"GENERIC_LOGGER_ENDPOINT": "https://x", "GENERIC_LOGGER_HEADERS": "novalue"})); err == nil {
		t.Error("bad headers: no error")
	}
	h, err := webhook.ParseHeaders(`{"A":"1"}`)
	if err != nil || h.Get("A") != "1" {
		t.Errorf("JSON headers: %v %v", h, err)
	}
}
