package app

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/inittrace"
)

// A cold start (Lambda): the function's init and its first request. Init
// waits only for what the handler needs to exist, and overlaps the rest:
//
//   - ResolveAWS starts the master key's SSM read; Build assembles everything
//     that does not need the key meanwhile, and awaitInit waits for it just
//     before the handler, which holds the key.
//   - readAhead reads, beside it, the shared state every first request reads
//     whatever its key: the deployments' cooldowns.
//
// Init still ends with nothing in flight: the runtime asks for the first
// event only after awaitInit, and Lambda may freeze the instance as soon as
// it asks (an instance initialised ahead of traffic), which would leave a
// call in flight for minutes.

// readAhead starts reading the cooldowns of the config's deployments into
// the cooldown cache (fresh for its TTL, 1 s), so that the first request
// does not read them; it also opens the DynamoDB connection and pays the
// SDK's first-call costs. A failure is the cache's (logged; the request
// then reads as it would have). The channel closes when the read is over.
func readAhead(ctx context.Context, cfg *config.Config, cooldowns cooldown.Store, now func() time.Time) <-chan struct{} {
	done := make(chan struct{})
	if cfg.Router.DisableCooldowns || len(cfg.Deployments) == 0 {
		close(done)
		return done
	}
	ids := make([]string, len(cfg.Deployments))
	for i, d := range cfg.Deployments {
		ids[i] = d.ID
	}
	if now == nil {
		now = time.Now
	}
	go func() {
		defer close(done)
		end := inittrace.Span("read_ahead")
		_, _ = cooldowns.CoolingDown(ctx, ids, now())
		end()
	}()
	runtime.Gosched() // as for the SSM read (aws.go)
	return done
}

// pendingSecret is the master key (value) and the salt key being read.
type pendingSecret struct {
	done           chan struct{} // closed when the values or err are set
	value, salt    string
	master, salted bool // which of them is read
	err            error
}

// awaitInit waits for the reads started ahead (the master key from SSM,
// the read-ahead) and sets s.MasterKey to the key read. A failed key read
// is init's failure: a function never runs open.
func (s *Settings) awaitInit(ctx context.Context) error {
	end := inittrace.Span("init_wait")
	defer end()
	if s.readAhead != nil {
		select {
		case <-s.readAhead:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.secrets != nil { // a secret not read is init's failure, as the master key's
		if err := s.secrets.Wait(ctx); err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
	}
	p := s.masterKeyRead
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("master key: %w", ctx.Err())
	}
	if p.err != nil {
		return fmt.Errorf("master key: %w", p.err)
	}
	if p.master {
		s.MasterKey = p.value
	}
	if p.salted {
		s.SaltKey = p.salt
	}
	return nil
}
