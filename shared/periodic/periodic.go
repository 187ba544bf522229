// Package periodic runs a function at a fixed interval until its context
// ends: the hold sweeper of local mode and the spend function, and local
// mode's re-read of stale secrets.
package periodic

import (
	"context"
	"time"
)

// Run calls f(ctx) every interval, the first call one interval from now,
// until ctx is done; it returns then (a call in progress ends first).
func Run(ctx context.Context, every time.Duration, f func(context.Context)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}
