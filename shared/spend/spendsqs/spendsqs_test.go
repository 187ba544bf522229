package spendsqs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

func TestMain(m *testing.M) { os.Exit(sqslocal.Main(m)) }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

type world struct {
	ks  *keys.Memory
	st  *spend.Memory
	c   *spend.Consumer
	key keys.Key
}

func newWorld(t *testing.T) *world {
	ks := keys.NewMemory()
	k := keys.Key{Hash: keys.HashSecret(spendtest.ID("sk"))}
	if err := ks.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	st := spend.NewMemory(ks)
	return &world{ks: ks, st: st, c: spend.NewConsumer(st, quiet()), key: k}
}

func (w *world) spent(t *testing.T) int64 {
	k, err := w.ks.GetKey(context.Background(), w.key.Hash)
	if err != nil {
		t.Fatal(err)
	}
	return keys.Nanos(k.Spend)
}

// poll runs the poller until the queue is drained and returns.
func poll(t *testing.T, url string, c *spend.Consumer, o spendsqs.PollOptions) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	o.Wait, o.Window, o.Logger, o.ShortPoll = 200*time.Millisecond, 200*time.Millisecond, quiet(), true
	go func() { errc <- spendsqs.Poll(ctx, sqslocal.Client(t), url, c.HandleSQS, o) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-errc:
			return err
		case <-time.After(300 * time.Millisecond):
		}
		if v, f := sqslocal.Count(t, url); v == 0 && f == 0 {
			cancel()
			return <-errc
		}
	}
	t.Fatal("queue not drained in 30s")
	return nil
}

// Batched publishing, then the poller: every event recorded once; a
// poison message ends in the dead-letter queue.
func TestPublishAndPoll(t *testing.T) {
	q := sqslocal.NewQueues(t, 1*time.Second, 2)
	w := newWorld(t)
	p := spendsqs.NewPublisher(sqslocal.Client(t), q.URL, w.c, spendsqs.Options{Logger: quiet()})
	now := time.Now()
	var want int64
	for i := range 95 {
		e := spendtest.Event(&w.key, "", now, int64(i+1))
		want += int64(i + 1)
		p.Publish(e)
		if i%10 == 0 {
			p.Publish(e) // a duplicate
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Sent != 95+10 || st.Saved != 0 || st.Calls > 20 {
		t.Fatalf("publisher stats %+v: want 105 sent in about 11 calls", st)
	}
	// A poison message.
	if _, err := sqslocal.Client(t).SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL),
		Entries: []types.SendMessageBatchRequestEntry{{Id: aws.String("p"), MessageBody: aws.String(`{"v":1,"request_id":"poison","cost":-3}`)}}}); err != nil {
		t.Fatal(err)
	}
	if err := poll(t, q.URL, w.c, spendsqs.PollOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := w.spent(t); got != want {
		t.Errorf("spend %d, want %d", got, want)
	}
	dead := sqslocal.Drain(t, q.DLQ)
	if len(dead) != 1 || !strings.Contains(dead[0], "poison") {
		t.Errorf("dead-letter queue = %v, want the poison message", dead)
	}
}

// Manual mode (Lambda) sends nothing until Flush.
func TestManualFlush(t *testing.T) {
	q := sqslocal.NewQueues(t, 30*time.Second, 3)
	w := newWorld(t)
	p := spendsqs.NewPublisher(sqslocal.Client(t), q.URL, w.c, spendsqs.Options{Manual: true, Logger: quiet()})
	for i := range 23 {
		p.Publish(spendtest.Event(&w.key, "", time.Now(), int64(i)))
	}
	if v, _ := sqslocal.Count(t, q.URL); v != 0 {
		t.Fatalf("%d messages before Flush", v)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v, _ := sqslocal.Count(t, q.URL); v != 23 {
		t.Fatalf("%d messages after Flush, want 23", v)
	}
	if s := p.Stats(); s.Calls != 3 {
		t.Errorf("%d calls for 23 events, want 3", s.Calls)
	}
}

// An SQS that refuses: the events are recorded straight through the store;
// if the store fails too, they are logged whole and replayable.
func TestFallback(t *testing.T) {
	w := newWorld(t)
	client := sqslocal.Client(t)
	missing := sqslocal.NewQueues(t, time.Second, 2).URL + "-missing"
	// The metrics hooks: failed SQS calls, events recorded or logged instead.
	var sqsErrors int
	fallbacks := map[string]int{}
	onFallback := func(path string, n int) { fallbacks[path] += n }
	w.c.OnFallback = onFallback
	p := spendsqs.NewPublisher(client, missing, w.c, spendsqs.Options{Logger: quiet(), Timeout: 3 * time.Second, Senders: 1, OnError: func() { sqsErrors++ }})
	e := spendtest.Event(&w.key, "", time.Now(), 42)
	p.Publish(e)
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Stats().Saved != 1 || w.spent(t) != 42 {
		t.Fatalf("stats %+v, spend %d; want the event recorded directly", p.Stats(), w.spent(t))
	}
	if sqsErrors != 1 || fallbacks["store"] != 1 || fallbacks["log"] != 0 {
		t.Fatalf("hooks: %d sqs errors, fallbacks %v; want 1 and store:1", sqsErrors, fallbacks)
	}
	var logs bytes.Buffer
	lost := spend.NewConsumer(failing{}, slog.New(slog.NewJSONHandler(&logs, nil)))
	lost.OnFallback = onFallback
	p = spendsqs.NewPublisher(client, missing, lost, spendsqs.Options{Manual: true, Logger: quiet(), OnError: func() { sqsErrors++ }})
	e2 := spendtest.Event(&w.key, "", time.Now(), 58)
	p.Publish(e2)
	_ = p.Flush(context.Background())
	if lost.Lost() != 1 || !strings.Contains(logs.String(), spend.LostMessage) {
		t.Fatalf("lost %d; log: %s", lost.Lost(), logs.String())
	}
	if sqsErrors != 2 || fallbacks["store"] != 1 || fallbacks["log"] != 1 {
		t.Fatalf("hooks: %d sqs errors, fallbacks %v; want 2 and store:1 log:1", sqsErrors, fallbacks)
	}
	rec, _, err := w.c.Replay(context.Background(), &logs)
	if err != nil || rec != 1 || w.spent(t) != 100 {
		t.Fatalf("replay: %d, %v; spend %d, want 100", rec, err, w.spent(t))
	}
}

type failing struct{ spend.Store }

func (failing) Record(context.Context, []spend.Event) (spend.Result, error) {
	return spend.Result{}, errors.New("store down")
}

// A poller stopped between handling and deleting leaves the batch on the
// queue; the next poller finds it recorded already.
func TestStoppedBeforeDelete(t *testing.T) {
	q := sqslocal.NewQueues(t, 1*time.Second, 5)
	w := newWorld(t)
	p := spendsqs.NewPublisher(sqslocal.Client(t), q.URL, w.c, spendsqs.Options{Logger: quiet()})
	for i := range 30 {
		p.Publish(spendtest.Event(&w.key, "", time.Now(), int64(i+1)))
	}
	_ = p.Close(context.Background())
	kill := errors.New("killed")
	err := poll(t, q.URL, w.c, spendsqs.PollOptions{AfterHandle: func(events.SQSEvent, events.SQSEventResponse) error { return kill }})
	if !errors.Is(err, kill) {
		t.Fatalf("poll = %v, want killed", err)
	}
	if err := poll(t, q.URL, w.c, spendsqs.PollOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := w.spent(t); got != 30*31/2 {
		t.Errorf("spend %d, want %d", got, 30*31/2)
	}
}

// Ten events carrying content (messages, response and metadata near
// spend.MaxContentLen each, and 64 long tags) exceed one SendMessageBatch's 256 KB: they go
// in several calls, all to the queue, none to the fallback.
func TestLargeEventsSplit(t *testing.T) {
	q := sqslocal.NewQueues(t, 30*time.Second, 3)
	w := newWorld(t)
	p := spendsqs.NewPublisher(sqslocal.Client(t), q.URL, w.c, spendsqs.Options{Manual: true, Logger: quiet()})
	big := json.RawMessage(`"` + strings.Repeat("x", spend.MaxContentLen-2) + `"`)
	for i := range 10 {
		e := spendtest.Event(&w.key, "", time.Now(), int64(i))
		e.Messages, e.Response, e.Metadata = big, big, big
		for j := range spend.MaxTags {
			e.Tags = append(e.Tags, fmt.Sprintf("%03d-%s", j, strings.Repeat("t", 196)))
		}
		p.Publish(e)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Sent != 10 || s.Saved != 0 || s.Calls < 2 {
		t.Fatalf("stats %+v: want 10 sent in at least 2 calls, none saved", s)
	}
	if v, _ := sqslocal.Count(t, q.URL); v != 10 {
		t.Fatalf("%d messages, want 10", v)
	}
}
