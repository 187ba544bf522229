package langfuse_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/callbacks"
	"github.com/sluice-gw/sluice/shared/callbacks/callbackstest"
	"github.com/sluice-gw/sluice/shared/callbacks/langfuse"
	"github.com/sluice-gw/sluice/shared/spend"
)

func records() []callbacks.Record {
	t0 := time.Date(2026, 12, 2, 7, 30, 0, 123456000, time.UTC)
	ok := callbacks.Record{CallID: "call-ok", Start: t0, End: t0.Add(2 * time.Second), CompletionStart: t0.Add(400 * time.Millisecond),
		Status: spend.StatusSuccess, StatusCode: 200, CallType: "chat", ModelGroup: "gpt", Model: "gpt-4o", DeploymentID: "dep-1",
		Provider: "openai", APIBase: "https://api.openai.com/v1", PromptTokens: 10, CompletionTokens: 5, CachedTokens: 4,
		CostNanos: 20_000, CostKnown: true, KeyHash: strings.Repeat("a", 64), KeyAlias: "ci", TeamID: "t1", UserID: "u1",
		EndUser: "cust", Tags: []string{"prod"},
		Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`), Response: json.RawMessage(`{"choices":[]}`)}
	bad := ok
	bad.CallID, bad.Status, bad.StatusCode, bad.Error, bad.CostNanos, bad.Response = "call-bad", spend.StatusFailure, 502, "upstream said no", 0, nil
	bad.CompletionStart = time.Time{}
	return []callbacks.Record{ok, bad}
}

// TestLangfuseBatch sends a trace and a generation per call, in one
// ingestion request with basic auth, with LiteLLM's fields; a failure is
// an ERROR-level generation with the error as its status message; sending
// again (a redelivery) leaves one of each.
func TestLangfuseBatch(t *testing.T) {
	f := callbackstest.NewLangfuse(t, "pk-lf-1", "sk-lf-1")
	s, err := langfuse.New(context.Background(), callbackstest.Env(map[string]string{"LANGFUSE_PUBLIC_KEY": "pk-lf-1", "LANGFUSE_SECRET_KEY": "sk-lf-1", "LANGFUSE_HOST": f.URL}))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Send(context.Background(), records()); err != nil {
			t.Fatal(err)
		}
	}
	traces, gens, problems := f.Counts()
	if traces != 2 || gens != 2 || len(problems) > 0 || f.Requests != 2 || f.Events != 8 {
		t.Fatalf("traces %d generations %d requests %d events %d problems %v; want 2, 2, 2, 8, none", traces, gens, f.Requests, f.Events, problems)
	}
	g := f.Generation("call-ok")
	usage, _ := g["usage"].(map[string]any)
	meta, _ := g["metadata"].(map[string]any)
	details, _ := g["usageDetails"].(map[string]any)
	for k, want := range map[string]any{
		"traceId": "call-ok", "name": "litellm:ci", "model": "gpt-4o", "level": "DEFAULT",
		"startTime": "2026-12-02T07:30:00.123456Z", "endTime": "2026-12-02T07:30:02.123456Z",
		"completionStartTime": "2026-12-02T07:30:00.523456Z",
	} {
		if g[k] != want {
			t.Errorf("generation %s = %v, want %v", k, g[k], want)
		}
	}
	if usage["input"] != 10.0 || usage["output"] != 5.0 || usage["total"] != 15.0 || usage["totalCost"] != 2e-5 || details["cache_read_input_tokens"] != 4.0 {
		t.Errorf("usage = %v, details %v", usage, details)
	}
	if meta["user_api_key_alias"] != "ci" || meta["user_api_key_team_id"] != "t1" || meta["litellm_response_cost"] != 2e-5 || meta["user_api_key_end_user_id"] != "cust" {
		t.Errorf("metadata = %v", meta)
	}
	tr := f.Trace("call-ok")
	if tr["name"] != "litellm-acompletion" || tr["userId"] != "cust" || tr["input"] == nil {
		t.Errorf("trace = %v", tr)
	}
	if tags, _ := tr["tags"].([]any); len(tags) != 1 || tags[0] != "prod" {
		t.Errorf("trace tags = %v", tr["tags"])
	}
	b := f.Generation("call-bad")
	if b["level"] != "ERROR" || b["statusMessage"] != "upstream said no" || b["output"] != "upstream said no" {
		t.Errorf("failed call's generation = %v", b)
	}
}

// TestLangfuseErrors: a server error or a dropped connection is retried
// (not Permanent); a 207 with a 5xx among its errors too; wrong keys wait
// for the operator (not Permanent); a 400 is Permanent.
func TestLangfuseErrors(t *testing.T) {
	f := callbackstest.NewLangfuse(t, "pk", "sk")
	s, err := langfuse.New(context.Background(), callbackstest.Env(map[string]string{"LANGFUSE_PUBLIC_KEY": "pk", "LANGFUSE_SECRET_KEY": "sk", "LANGFUSE_HOST": f.URL}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		down      int
		permanent bool
	}{{500, false}, {-1, false}, {503, false}, {400, true}} {
		f.SetDown(c.down)
		err := s.Send(context.Background(), records())
		if err == nil || callbacks.IsPermanent(err) != c.permanent {
			t.Errorf("down %d: err %v (permanent %v), want permanent %v", c.down, err, callbacks.IsPermanent(err), c.permanent)
		}
	}
	f.SetDown(0)
	wrong, _ := langfuse.New(context.Background(), callbackstest.Env(map[string]string{"LANGFUSE_PUBLIC_KEY": "pk", "LANGFUSE_SECRET_KEY": "nope", "LANGFUSE_HOST": f.URL}))
	var se *callbacks.StatusError
	err = wrong.Send(context.Background(), records())
	if !errors.As(err, &se) || se.Status != 401 || callbacks.IsPermanent(err) {
		t.Fatalf("wrong keys: %v", err)
	}
	if strings.Contains(err.Error(), "nope") {
		t.Error("the secret key is in the error")
	}
	if _, err := langfuse.New(context.Background(), callbackstest.Env(nil)); err == nil {
		t.Error("no keys: no error")
	}
}

// BenchmarkSend100 is one consumer batch of 100 calls (without content)
// to the fake: the CPU a batch costs the spend function (docs/callbacks.md).
func BenchmarkSend100(b *testing.B) {
	f := callbackstest.NewLangfuse(b, "pk", "sk")
	s, err := langfuse.New(context.Background(), callbackstest.Env(map[string]string{"LANGFUSE_PUBLIC_KEY": "pk", "LANGFUSE_SECRET_KEY": "sk", "LANGFUSE_HOST": f.URL}))
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]callbacks.Record, 100)
	for i := range recs {
		recs[i] = records()[0]
		recs[i].CallID, recs[i].Messages, recs[i].Response = "call-"+strings.Repeat("x", 20)+string(rune('a'+i%26)), nil, nil
	}
	b.ResetTimer()
	for range b.N {
		if err := s.Send(context.Background(), recs); err != nil {
			b.Fatal(err)
		}
	}
}
