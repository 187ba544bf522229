package s3log_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/callbacks"
	"github.com/sluice-gw/sluice/shared/callbacks/callbackstest"
	"github.com/sluice-gw/sluice/shared/callbacks/s3log"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

func TestMain(m *testing.M) { os.Exit(sqslocal.Main(m)) }

// TestS3Objects writes one object per call in LiteLLM's layout, holding
// its StandardLoggingPayload with the spend log's cost; a redelivery
// overwrites (no second object); a call id cannot climb out of s3_path.
func TestS3Objects(t *testing.T) {
	b := callbackstest.NewBucket(t)
	s, err := s3log.New(context.Background(), callbacks.Env{Params: map[string]string{
		"s3_bucket_name": b.Name, "s3_endpoint_url": b.Endpoint, "s3_region_name": "us-east-1",
		"s3_aws_access_key_id": "dummy", "s3_aws_secret_access_key": "dummy", "s3_path": "litellm-logs/",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 2, 7, 30, 5, 250000000, time.UTC)
	recs := []callbacks.Record{
		{CallID: "c-1", Start: t0, End: t0.Add(time.Second), Status: spend.StatusSuccess, CallType: "chat", Model: "gpt-4o",
			ModelGroup: "gpt", PromptTokens: 7, CompletionTokens: 3, CachedTokens: 2, CostNanos: 123_456, CostKnown: true,
			KeyAlias: "ci", EndUser: "cust", Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`)},
		{CallID: "../../etc/x", Start: t0, End: t0, Status: spend.StatusFailure, StatusCode: 429, Error: "slow down"},
	}
	for range 2 {
		if err := s.Send(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
	}
	keys := b.Keys(t)
	want := []string{"litellm-logs/2026-12-02/time-07-30-05-250000_______etc_x.json", "litellm-logs/2026-12-02/time-07-30-05-250000_c-1.json"}
	if strings.Join(keys, "\n") != strings.Join(want, "\n") {
		t.Fatalf("keys:\n%s\nwant:\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
	}
	o := b.Object(t, want[1])
	meta, _ := o["metadata"].(map[string]any)
	usage, _ := meta["usage_object"].(map[string]any)
	details, _ := usage["prompt_tokens_details"].(map[string]any)
	if o["id"] != "c-1" || o["status"] != "success" || o["response_cost"] != 0.000123456 || o["response_cost_nanos"] != 123456.0 ||
		o["total_tokens"] != 10.0 || o["model_group"] != "gpt" || o["call_type"] != "acompletion" || o["end_user"] != "cust" ||
		meta["user_api_key_alias"] != "ci" || details["cached_tokens"] != 2.0 || o["startTime"] != float64(t0.UnixNano())/1e9 {
		t.Errorf("payload = %v", o)
	}
	if msgs, _ := o["messages"].([]any); len(msgs) != 1 {
		t.Errorf("messages = %v", o["messages"])
	}
	f := b.Object(t, want[0])
	info, _ := f["error_information"].(map[string]any)
	if f["status"] != "failure" || f["error_str"] != "slow down" || info["error_class"] != "RateLimitError" {
		t.Errorf("failure payload = %v", f)
	}
}

// TestS3Unreachable fails (to be retried) when the endpoint does not
// answer, and a missing bucket name fails the build.
func TestS3Unreachable(t *testing.T) {
	s, err := s3log.New(context.Background(), callbacks.Env{Params: map[string]string{
		"s3_bucket_name": "b", "s3_endpoint_url": "http://127.0.0.1:1", "s3_region_name": "us-east-1",
		"s3_aws_access_key_id": "dummy", "s3_aws_secret_access_key": "dummy",
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Send(ctx, []callbacks.Record{{CallID: "x", Start: time.Now(), End: time.Now(), Status: spend.StatusSuccess}}); err == nil || callbacks.IsPermanent(err) {
		t.Errorf("unreachable: %v", err)
	}
	if _, err := s3log.New(context.Background(), callbacks.Env{}); err == nil {
		t.Error("no bucket: no error")
	}
}

// BenchmarkSend100 is one consumer batch of 100 calls to S3 on moto: 100
// PutObject calls, 16 at a time (docs/callbacks.md).
func BenchmarkSend100(b *testing.B) {
	bk := callbackstest.NewBucket(b)
	s, err := s3log.New(context.Background(), callbacks.Env{Params: map[string]string{
		"s3_bucket_name": bk.Name, "s3_endpoint_url": bk.Endpoint, "s3_region_name": "us-east-1",
		"s3_aws_access_key_id": "dummy", "s3_aws_secret_access_key": "dummy",
	}})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	recs := make([]callbacks.Record, 100)
	for i := range recs {
		recs[i] = callbacks.Record{CallID: fmt.Sprintf("c-%d", i), Start: t0, End: t0, Status: spend.StatusSuccess, PromptTokens: 10, CostNanos: 5, CostKnown: true}
	}
	b.ResetTimer()
	for range b.N {
		if err := s.Send(context.Background(), recs); err != nil {
			b.Fatal(err)
		}
	}
}
