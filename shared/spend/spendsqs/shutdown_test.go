package spendsqs_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

// unanswered is the URL of a listener that accepts connections and never
// answers (an SQS that hangs).
func unanswered(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + l.Addr().String()
}

// TestCloseDeadline: with SQS and the store both hanging, Close's
// deadline cuts the calls in flight, and every event not sent (in flight,
// or still queued) is logged whole before Close returns.
func TestCloseDeadline(t *testing.T) {
	client := sqs.NewFromConfig(aws.Config{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""),
		BaseEndpoint: aws.String(unanswered(t)),
	})
	var logs bytes.Buffer
	c := spend.NewConsumer(spendtest.Hanging{}, slog.New(slog.NewJSONHandler(&logs, nil)))
	p := spendsqs.NewPublisher(client, "http://sqs.invalid/000000000000/q", c, spendsqs.Options{Logger: quiet(), Senders: 1})
	want := spendtest.PublishN(25, p.Publish) // one batch in flight, the others queued behind it
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the deadline", err)
	}
	if n := spendtest.Unlogged(t, logs.String(), want); n > 0 {
		t.Fatalf("%d of 25 events neither sent nor logged when Close returned (lost %d)", n, c.Lost())
	}
}

// startPoll runs Poll on url with handle until the returned cancel; done
// yields Poll's error.
func startPoll(t *testing.T, url string, handle spendsqs.Handler, o spendsqs.PollOptions) (cancel func(), done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	errc := make(chan error, 1)
	o.Logger = quiet()
	go func() { errc <- spendsqs.Poll(ctx, sqslocal.Client(t), url, handle, o) }()
	return cancel, errc
}

func waitPoll(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Poll did not return within 15 s of its context's end")
	}
}

// TestPollShutdownFinishesGathered: SIGTERM while a batch is still
// gathering (its first message received, the window open): the batch is
// handled and deleted, not dropped to come back after its visibility
// timeout.
func TestPollShutdownFinishesGathered(t *testing.T) {
	q := sqslocal.NewQueues(t, 60*time.Second, 5)
	w := newWorld(t)
	p := spendsqs.NewPublisher(sqslocal.Client(t), q.URL, w.c, spendsqs.Options{Logger: quiet()})
	p.Publish(spendtest.Event(&w.key, "", time.Now(), 42))
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel, done := startPoll(t, q.URL, w.c.HandleSQS, spendsqs.PollOptions{Window: 20 * time.Second, Wait: time.Second})
	for deadline := time.Now().Add(20 * time.Second); ; { // received: the window's long poll is running
		if _, inFlight := sqslocal.Count(t, q.URL); inFlight == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the poller did not receive the message")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	waitPoll(t, done)
	if got := w.spent(t); got != 42 {
		t.Errorf("spend %d, want 42: the gathered batch was not handled", got)
	}
	if v, f := sqslocal.Count(t, q.URL); v != 0 || f != 0 {
		t.Errorf("queue: %d visible, %d in flight; want it empty", v, f)
	}
}

// TestPollShutdownReturnsBatch: SIGTERM while the store hangs: past the
// drain the handler's context ends, and the batch's messages are visible
// again at once (not after the 60 s visibility timeout), unrecorded.
func TestPollShutdownReturnsBatch(t *testing.T) {
	q := sqslocal.NewQueues(t, 60*time.Second, 5)
	w := newWorld(t)
	p := spendsqs.NewPublisher(sqslocal.Client(t), q.URL, w.c, spendsqs.Options{Logger: quiet()})
	for range 3 {
		p.Publish(spendtest.Event(&w.key, "", time.Now(), 1))
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	hung := spend.NewConsumer(spendtest.Hanging{}, quiet())
	entered := make(chan struct{}, 1)
	handle := func(ctx context.Context, b events.SQSEvent) (events.SQSEventResponse, error) {
		select {
		case entered <- struct{}{}:
		default:
		}
		return hung.HandleSQS(ctx, b)
	}
	cancel, done := startPoll(t, q.URL, handle, spendsqs.PollOptions{Window: 200 * time.Millisecond, Wait: time.Second, ShortPoll: true, Drain: 300 * time.Millisecond})
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the poller did not handle a batch")
	}
	cancel()
	waitPoll(t, done)
	got := 0
	for _, body := range sqslocal.Drain(t, q.URL) { // a receive now: only visible messages
		if _, err := spend.Decode([]byte(body)); err == nil {
			got++
		}
	}
	if got != 3 {
		t.Errorf("%d messages visible after the shutdown, want the 3 not recorded", got)
	}
}
