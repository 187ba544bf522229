package callbackpipe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"net/http/httptest"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/callbacks/callbackstest"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/ddblocal/ddbharness"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

// world is one gateway on DynamoDB and SQS, its consumer, and the three
// sinks' destinations.
type world struct {
	gw       *httptest.Server
	pipe     *pipeline
	q        sqslocal.Queues
	hash     string
	langfuse *callbackstest.Langfuse
	hook     *callbackstest.Webhook
	bucket   callbackstest.Bucket
}

func newWorld(t *testing.T, extra string, langfuseDown int) *world {
	t.Helper()
	up := ddbharness.Upstream(t)
	cfg := ddblocal.Config(t)
	sqslocal.Require(t)
	names := ddblocal.Tables(t)
	w := &world{
		q:        sqslocal.NewQueues(t, 2*time.Second, 5),
		langfuse: callbackstest.NewLangfuse(t, "pk-lf", "sk-lf"),
		hook:     callbackstest.NewWebhook(t),
		bucket:   callbackstest.NewBucket(t),
	}
	w.langfuse.SetDown(langfuseDown)
	settings := fmt.Sprintf(`  callbacks: [langfuse, s3, generic_api]
  s3_callback_params:
    s3_bucket_name: %s
    s3_endpoint_url: %s
    s3_region_name: us-east-1
    s3_aws_access_key_id: dummy
    s3_aws_secret_access_key: os.environ/S3_SECRET
    s3_path: logs
%s`, w.bucket.Name, w.bucket.Endpoint, extra)
	yaml := gatewayConfig(up.URL, settings)
	gw, err := app.Build(context.Background(), app.Settings{
		ConfigYAML: []byte(yaml), Logger: gatewaytest.Quiet(), Store: app.StoreDynamoDB, AWS: &cfg, Emulator: true,
		Tables: names, SpendQueueURL: w.q.URL,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	w.hash = createKey(t, gw.Keys)
	w.gw = httptest.NewServer(gw.HTTP)
	t.Cleanup(w.gw.Close)
	w.pipe = startConsumer(t, cfg, names, w.q.URL, yaml, map[string]string{
		"LANGFUSE_PUBLIC_KEY": "pk-lf", "LANGFUSE_SECRET_KEY": "sk-lf", "LANGFUSE_HOST": w.langfuse.URL,
		"GENERIC_LOGGER_ENDPOINT": w.hook.URL, "S3_SECRET": "dummy",
	})
	return w
}

// calls sends 4 successful and 2 failed requests, returning their ids.
func (w *world) calls(t *testing.T) []string {
	var ids []string
	for i := range 6 {
		model := "m"
		if i%3 == 2 {
			model = "broken"
		}
		ids = append(ids, call(t, w.gw.URL, model, fmt.Sprintf("tell me secret-prompt-%d", i)))
	}
	sort.Strings(ids)
	return ids
}

// s3Objects returns the bucket's objects by call id, checking each key
// (under s3_path, named for its call) and that no call has two.
func (w *world) s3Objects(t *testing.T) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, k := range w.bucket.Keys(t) {
		o := w.bucket.Object(t, k)
		id, _ := o["id"].(string)
		if !strings.HasPrefix(k, "logs/") || !strings.HasSuffix(k, "_"+id+".json") {
			t.Errorf("key %s outside s3_path", k)
		}
		if _, dup := out[id]; dup {
			t.Errorf("two objects for %s", id)
		}
		out[id] = o
	}
	return out
}

// TestCallbacksThroughSQS: with Langfuse answering 500 at first, the
// spend is recorded, the batch is redelivered until Langfuse is back, and
// then every call has exactly one trace and generation there, one S3
// object and one webhook payload, each with the spend log's cost; the
// key's spend counts each call once despite the redeliveries; nothing
// reaches the dead-letter queue. Message logging is on: the prompt is in
// the records.
func TestCallbacksThroughSQS(t *testing.T) {
	w := newWorld(t, "", 500)
	ids := w.calls(t)
	waitFor(t, time.Minute, "the spend logs", func() bool { return len(logs(t, w.pipe.store, w.hash)) == len(ids) })
	// Langfuse down: the batch fails after the dispatcher's attempts and
	// comes again (more requests than one batch's attempts).
	waitFor(t, time.Minute, "a redelivery while Langfuse is down", func() bool {
		_, gens, _ := w.langfuse.Counts()
		return gens == 0 && w.langfuseRequests() > 3
	})
	w.langfuse.SetDown(0)
	waitFor(t, 2*time.Minute, "every generation in Langfuse", func() bool {
		_, gens, _ := w.langfuse.Counts()
		return gens == len(ids)
	})
	waitFor(t, time.Minute, "the queue drained", func() bool {
		v, f := sqslocal.Count(t, w.q.URL)
		return v == 0 && f == 0
	})
	if dead := sqslocal.Drain(t, w.q.DLQ); len(dead) != 0 {
		t.Errorf("%d messages in the dead-letter queue", len(dead))
	}
	ls := logs(t, w.pipe.store, w.hash)
	traces, gens, problems := w.langfuse.Counts()
	if traces != len(ids) || gens != len(ids) || len(problems) != 0 {
		t.Errorf("langfuse: %d traces, %d generations, problems %v; want %d each", traces, gens, problems, len(ids))
	}
	objs := w.s3Objects(t)
	if len(objs) != len(ids) {
		t.Errorf("%d S3 objects, want %d", len(objs), len(ids))
	}
	var total int64
	for _, id := range ids {
		l, ok := ls[id]
		if !ok {
			t.Errorf("no spend log for %s", id)
			continue
		}
		total += l.Cost
		g := w.langfuse.Generation(id)
		usage, _ := g["usage"].(map[string]any)
		cost, _ := usage["totalCost"].(float64)
		if g == nil || int64(math.Round(cost*1e9)) != l.Cost {
			t.Errorf("%s: langfuse cost %v, spend log %d nano-USD (generation %v)", id, cost, l.Cost, g)
		}
		wantLevel := "DEFAULT"
		if !l.Success() {
			wantLevel = "ERROR"
		}
		if g["level"] != wantLevel {
			t.Errorf("%s: level %v, want %s", id, g["level"], wantLevel)
		}
		in, _ := json.Marshal(g["input"])
		if !strings.Contains(string(in), "secret-prompt-") {
			t.Errorf("%s: langfuse input %s lacks the prompt (message logging is on)", id, in)
		}
		o := objs[id]
		if n, _ := o["response_cost_nanos"].(float64); o == nil || int64(n) != l.Cost {
			t.Errorf("%s: S3 cost %v, spend log %d", id, o["response_cost_nanos"], l.Cost)
		}
		p := w.hook.Payload(id)
		if n, _ := p["response_cost_nanos"].(float64); p == nil || int64(n) != l.Cost {
			t.Errorf("%s: webhook cost %v, spend log %d", id, p["response_cost_nanos"], l.Cost)
		}
	}
	k, err := w.pipe.keys.GetKey(context.Background(), w.hash)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys.Nanos(k.Spend); got != total || total == 0 {
		t.Errorf("key spend %d nano-USD, want the logs' sum %d (each call once)", got, total)
	}
}

func (w *world) langfuseRequests() int { return w.langfuse.RequestCount() }

// TestTurnOffMessageLogging: with turn_off_message_logging and
// redact_user_api_key_info, no sink sees the prompt, the answer or the
// key's details; usage and cost are still there.
func TestTurnOffMessageLogging(t *testing.T) {
	w := newWorld(t, "  turn_off_message_logging: true\n  redact_user_api_key_info: true\n", 0)
	ids := w.calls(t)
	waitFor(t, time.Minute, "every record in every sink", func() bool {
		_, gens, _ := w.langfuse.Counts()
		return gens == len(ids) && len(w.bucket.Keys(t)) == len(ids) && w.hook.Count() == len(ids)
	})
	var all []string
	for _, id := range ids {
		for _, m := range []map[string]any{w.langfuse.Generation(id), w.langfuse.Trace(id), w.hook.Payload(id)} {
			b, _ := json.Marshal(m)
			all = append(all, string(b))
		}
	}
	for _, o := range w.s3Objects(t) {
		b, _ := json.Marshal(o)
		all = append(all, string(b))
		if o["prompt_tokens"] == 0.0 && o["status"] == "success" {
			t.Errorf("usage dropped: %s", b)
		}
	}
	joined := strings.Join(all, "\n")
	for _, leak := range []string{"secret-prompt-", ddbharness.Answer, "cb-key", w.hash, "team-cb", `"r-9"`} {
		if strings.Contains(joined, leak) {
			t.Errorf("a sink received %q", leak)
		}
	}
	for _, id := range ids {
		g := w.langfuse.Generation(id)
		if usage, _ := g["usage"].(map[string]any); usage["input"] == nil {
			t.Errorf("%s: no usage in %v", id, g)
		}
	}
}
