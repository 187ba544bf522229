package periodic_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/periodic"
)

// TestRun: f runs again and again, on Run's context, until the context
// ends, and Run returns then, calling f no more.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan context.Context)
	done := make(chan struct{})
	go func() {
		defer close(done)
		periodic.Run(ctx, time.Millisecond, func(c context.Context) { calls <- c })
	}()
	for range 3 {
		if c := <-calls; c != ctx {
			t.Fatalf("f called with %v, want Run's context", c)
		}
	}
	cancel()
	for {
		select {
		case <-calls: // a tick that raced the cancel
		case <-done:
			select {
			case <-calls:
				t.Fatal("f called after Run returned")
			default:
			}
			return
		}
	}
}
