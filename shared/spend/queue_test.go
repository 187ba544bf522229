package spend_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
)

// TestQueueCloseDeadline: when Close's deadline passes with the store
// hanging, the batch being recorded and the events queued behind it are
// each logged whole (for -replay) before Close returns its error; none is
// dropped without a line.
func TestQueueCloseDeadline(t *testing.T) {
	var logs bytes.Buffer
	c := spend.NewConsumer(spendtest.Hanging{}, slog.New(slog.NewJSONHandler(&logs, nil)))
	q := spend.NewQueue(c, spend.QueueOptions{Batch: 2})
	want := spendtest.PublishN(5, q.Publish)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := q.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the deadline", err)
	}
	if n := spendtest.Unlogged(t, logs.String(), want); n > 0 || c.Lost() != 5 {
		t.Fatalf("%d events not logged (lost %d):\n%s", n, c.Lost(), logs.String())
	}
	q.Publish(spendtest.Event(nil, "", time.Now(), 1)) // a request ending after Close: logged at once
	if c.Lost() != 6 {
		t.Fatalf("an event published after Close gave up: lost %d, want 6", c.Lost())
	}
}
