package spendtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/spend"
)

// What the shutdown tests of the spend queues share: a store that hangs,
// and the check that every event given up on is logged whole for -replay.

// Hanging is a store whose Record returns only when its context ends.
type Hanging struct{ spend.Store }

// Record implements spend.Store.
func (Hanging) Record(ctx context.Context, _ []spend.Event) (spend.Result, error) {
	<-ctx.Done()
	return spend.Result{}, ctx.Err()
}

// PublishN publishes n valid events (of the master key) through publish
// and returns their request ids.
func PublishN(n int, publish func(spend.Event)) map[string]bool {
	ids := make(map[string]bool, n)
	for range n {
		e := Event(nil, "", time.Now(), 1)
		ids[e.RequestID] = true
		publish(e)
	}
	return ids
}

// Unlogged returns how many of the request ids ids no replay line of logs
// (spend.ReadReplay) carries; a line that does not read fails t.
func Unlogged(t *testing.T, logs string, ids map[string]bool) int {
	t.Helper()
	evs, bad, err := spend.ReadReplay(strings.NewReader(logs))
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	n := len(ids)
	for _, e := range evs {
		if ids[e.RequestID] {
			n--
			ids[e.RequestID] = false
		}
	}
	return n
}
