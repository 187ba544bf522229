package spendsqs_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
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

// hangingStore's calls return only when their context ends.
type hangingStore struct{ spend.Store }

func (hangingStore) Record(ctx context.Context, _ []spend.Event) (spend.Result, error) {
	<-ctx.Done()
	return spend.Result{}, ctx.Err()
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
	c := spend.NewConsumer(hangingStore{}, slog.New(slog.NewJSONHandler(&logs, nil)))
	p := spendsqs.NewPublisher(client, "http://sqs.invalid/000000000000/q", c, spendsqs.Options{Logger: quiet(), Senders: 1})
	want := map[string]bool{}
	for range 25 { // one batch in flight, the others queued behind it
		e := spendtest.Event(nil, "", time.Now(), 1)
		want[e.RequestID] = true
		p.Publish(e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the deadline", err)
	}
	evs, bad, err := spend.ReadReplay(strings.NewReader(logs.String()))
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	for _, e := range evs {
		delete(want, e.RequestID)
	}
	if len(want) > 0 {
		t.Fatalf("%d of 25 events neither sent nor logged when Close returned (lost %d)", len(want), c.Lost())
	}
}
