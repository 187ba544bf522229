package spend_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
)

// hanging is a store that is down the slow way: a call returns only when
// its context ends.
type hanging struct{ spend.Store }

func (hanging) Record(ctx context.Context, _ []spend.Event) (spend.Result, error) {
	<-ctx.Done()
	return spend.Result{}, ctx.Err()
}

// TestQueueCloseDeadline: when Close's deadline passes with the store
// hanging, the batch being recorded and the events queued behind it are
// each logged whole (for -replay) before Close returns its error; none is
// dropped without a line.
func TestQueueCloseDeadline(t *testing.T) {
	var logs bytes.Buffer
	c := spend.NewConsumer(hanging{}, slog.New(slog.NewJSONHandler(&logs, nil)))
	q := spend.NewQueue(c, spend.QueueOptions{Batch: 2})
	want := map[string]bool{}
	for range 5 {
		e := spendtest.Event(nil, "", time.Now(), 1)
		want[e.RequestID] = true
		q.Publish(e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := q.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the deadline", err)
	}
	evs, bad, err := spend.ReadReplay(strings.NewReader(logs.String()))
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	for _, e := range evs {
		delete(want, e.RequestID)
	}
	if len(want) > 0 || c.Lost() != 5 {
		t.Fatalf("%d events not logged (lost %d):\n%s", len(want), c.Lost(), logs.String())
	}
	q.Publish(spendtest.Event(nil, "", time.Now(), 1)) // a request ending after Close: logged at once
	if c.Lost() != 6 {
		t.Fatalf("an event published after Close gave up: lost %d, want 6", c.Lost())
	}
}
