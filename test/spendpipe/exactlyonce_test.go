package spendpipe_test

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

// TestExactlyOnce: 10,000 events (SPEND_TEST_EVENTS; 2,000 by default) from
// 4 concurrent publishers, 20% of them
// duplicates (sent again, by another publisher), plus 3 poison messages;
// two consumers at once, one killed between its transaction and its
// deletes and then restarted. Every total (key, team, user, team member,
// end user, daily rows) equals the sum of the distinct events to the
// nano-dollar, as DynamoDB stores it; every log exists once; the poison
// messages are in the dead-letter queue.
func TestExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 events through SQS and DynamoDB Local")
	}
	cfg := awsConfig(t, nil)
	names := ddblocal.Tables(t)
	// A visibility timeout well above a batch's handling time, even on a
	// loaded machine: a valid message must never reach maxReceiveCount.
	q := sqslocal.NewQueues(t, 20*time.Second, 3)
	ks := ddbkeys.New(ddblocal.Client(t), names.Keys, ddbkeys.Options{})
	w := spendtest.NewWorld(t, ks, 6, 8)
	now := time.Now().UTC()
	r := mrand.New(mrand.NewPCG(7, 8))
	// The run is SPEND_TEST_EVENTS=10000 (about 15 minutes here:
	// moto and DynamoDB Local manage some 10 events a second through the
	// whole pipeline). By default 2,000, to keep ./test/run.sh within its
	// timeout on a loaded machine; the invariants are the same.
	total := 2_000
	if v, err := strconv.Atoi(os.Getenv("SPEND_TEST_EVENTS")); err == nil && v >= 100 {
		total = v
	}
	distinct := spendtest.RandomEvents(w, total*8/10, now, r)
	all := slices.Clone(distinct)
	for _, i := range r.Perm(len(distinct))[:total/5] {
		all = append(all, distinct[i])
	}
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })

	// Poison: a negative cost, a non-finite cost, an unknown version.
	bad := []string{
		strings.Replace(string(spend.Encode(&distinct[0])), `"cost":`, `"cost":-`, 1),
		regexp.MustCompile(`"cost":[0-9]+`).ReplaceAllString(string(spend.Encode(&distinct[1])), `"cost":"NaN"`),
		strings.Replace(string(spend.Encode(&distinct[2])), `"v":1`, `"v":9`, 1),
	}
	for i, b := range bad {
		if _, err := spend.Decode([]byte(b)); err == nil {
			t.Fatalf("poison %d decodes: %s", i, b)
		}
	}
	client := sqs.NewFromConfig(cfg)
	for i, b := range bad {
		if _, err := client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL),
			Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("p"), MessageBody: aws.String(b)}}}); err != nil {
			t.Fatalf("poison %d: %v", i, err)
		}
	}

	// The first consumer starts at once and is killed after its third batch
	// is recorded, before its deletes; a second one runs all along.
	st1, st2 := consumerStore(t, cfg, names), consumerStore(t, cfg, names)
	var batches atomic.Int32
	killed := errors.New("killed between the transaction and the deletes")
	stop1 := consumer(t, cfg, q.URL, st1, spendsqs.PollOptions{AfterHandle: func(b events.SQSEvent, _ events.SQSEventResponse) error {
		if batches.Add(1) == 3 {
			return killed
		}
		return nil
	}})
	consumer(t, cfg, q.URL, st2, spendsqs.PollOptions{})

	// Four publishers, as four gateways, each with a quarter of the events.
	deadline := time.Now().Add(10 * time.Minute)
	var wg sync.WaitGroup
	var fallbacks atomic.Int64
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pub := spendsqs.NewPublisher(sqs.NewFromConfig(cfg), q.URL, spend.NewConsumer(st1, quiet()),
				spendsqs.Options{Logger: quiet(), Senders: 1, Timeout: time.Minute})
			for i := p; i < len(all); i += 4 {
				// moto's receives and deletes scan the whole queue: a
				// queue thousands deep would measure moto, not Sluice.
				// Publishers hold back while it is over 400 deep.
				if (i/4)%100 == 99 {
					_ = pub.Flush(context.Background())
					for v, _ := sqslocal.Count(t, q.URL); v > 300 && time.Now().Before(deadline); v, _ = sqslocal.Count(t, q.URL) {
						time.Sleep(200 * time.Millisecond)
					}
				}
				pub.Publish(all[i])
			}
			if err := pub.Close(context.Background()); err != nil {
				t.Error(err)
			}
			fallbacks.Add(pub.Stats().Saved)
		}()
	}
	wg.Wait()
	t.Logf("%v: published", time.Since(now))
	// Wait for the kill, then restart the first consumer.
	for batches.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := stop1(); !errors.Is(err, killed) {
		t.Fatalf("first consumer ended with %v, want killed", err)
	}
	t.Logf("%v: first consumer killed", time.Since(now))
	consumer(t, cfg, q.URL, consumerStore(t, cfg, names), spendsqs.PollOptions{})
	waitDrained(t, q.URL, 10*time.Minute)
	t.Logf("%v: drained", time.Since(now))

	// Totals, exact, from DynamoDB's own numbers.
	want := spendtest.Sum(distinct)
	raw := ddblocal.Client(t)
	for ref, n := range want.Refs {
		if got := rawSpend(t, raw, names.Keys, ref); got != n {
			t.Errorf("%s spend = %d nano-USD, want %d (diff %d)", ref, got, n, got-n)
		}
	}
	kinds := map[keys.Kind]int{}
	for ref := range want.Refs {
		kinds[ref.Kind]++
	}
	if len(kinds) != 5 {
		t.Errorf("the events touched record kinds %v, want all five", kinds)
	}
	spendtest.Check(t, st1, ks, want, now.Add(-2*time.Hour), now)
	dead := sqslocal.Drain(t, q.DLQ)
	slices.Sort(dead)
	slices.Sort(bad)
	if !slices.Equal(dead, bad) {
		t.Errorf("dead-letter queue holds %d messages, want the 3 poison ones:\n%v", len(dead), dead)
	}
	t.Logf("fallbacks %d; consumer transactions %d+%d, cancellations %d+%d",
		fallbacks.Load(), st1.Stats().Transactions, st2.Stats().Transactions, st1.Stats().Cancellations, st2.Stats().Cancellations)
}

// TestBadInput: each kind of bad event goes to the dead-letter queue and
// changes no total, while the valid event beside it is recorded.
func TestBadInput(t *testing.T) {
	cfg := awsConfig(t, nil)
	names := ddblocal.Tables(t)
	q := sqslocal.NewQueues(t, 1*time.Second, 2)
	ks := ddbkeys.New(ddblocal.Client(t), names.Keys, ddbkeys.Options{})
	w := spendtest.NewWorld(t, ks, 1, 0)
	good := spendtest.Event(&w.Keys[0], "", time.Now().UTC(), 777)
	enc := string(spend.Encode(&good))
	bad := map[string]string{
		"negative cost":     strings.Replace(enc, `"cost":777`, `"cost":-777`, 1),
		"NaN cost":          strings.Replace(enc, `"cost":777`, `"cost":"NaN"`, 1),
		"infinite cost":     strings.Replace(enc, `"cost":777`, `"cost":1e999`, 1),
		"unknown version":   strings.Replace(enc, `"v":1`, `"v":99`, 1),
		"missing request":   strings.Replace(enc, `"request_id":"`+good.RequestID+`"`, `"request_id":""`, 1),
		"missing key hash":  strings.Replace(enc, w.Keys[0].Hash, "not-a-hash", 1),
		"not JSON":          enc[:len(enc)/2],
		"not a spend event": `{"hello":"world"}`,
	}
	client := sqs.NewFromConfig(cfg)
	send := func(body string) {
		if _, err := client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL),
			Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("1"), MessageBody: aws.String(body)}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range bad {
		send(b)
	}
	send(enc)
	st := consumerStore(t, cfg, names)
	consumer(t, cfg, q.URL, st, spendsqs.PollOptions{})
	waitDrained(t, q.URL, time.Minute)
	if got := rawSpend(t, ddblocal.Client(t), names.Keys, keys.Ref{Kind: keys.KindKey, ID: w.Keys[0].Hash}); got != 777 {
		t.Errorf("key spend %d, want 777 (the valid event only)", got)
	}
	dead := sqslocal.Drain(t, q.DLQ)
	if len(dead) != len(bad) {
		t.Errorf("%d messages in the dead-letter queue, want %d", len(dead), len(bad))
	}
	for name, b := range bad {
		if !slices.Contains(dead, b) {
			t.Errorf("%s: not in the dead-letter queue", name)
		}
	}
	logs, err := st.Logs(context.Background(), spend.LogQuery{KeyHash: w.Keys[0].Hash})
	if err != nil || len(logs) != 1 {
		t.Errorf("logs %v, %v; want the valid event's only", logs, err)
	}
}
