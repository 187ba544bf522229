package gatewayapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/app/appenv"
)

// cutGrace is how long requests cut at the drain deadline get to return
// (their upstream calls end with their context; they record their spend
// event and return in milliseconds) before the connections are closed.
const cutGrace = 3 * time.Second

// drainer tracks a local server's requests so that shutdown can cut the
// ones still running at the drain deadline and wait for them to return:
// each returns through the gateway's OnComplete, which publishes its
// spend event, before the spend publisher is flushed.
type drainer struct {
	cut      context.Context // every request's base context
	cancel   context.CancelFunc
	inFlight atomic.Int64
}

func newDrainer() *drainer {
	d := &drainer{}
	d.cut, d.cancel = context.WithCancel(context.Background())
	return d
}

// wrap serves srv's requests under d.
func (d *drainer) wrap(srv *http.Server) {
	h := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.inFlight.Add(1)
		defer d.inFlight.Add(-1)
		h.ServeHTTP(w, r)
	})
	srv.BaseContext = func(net.Listener) context.Context { return d.cut }
}

// shutdown stops srv as SIGTERM asks: it stops accepting and lets the
// requests in flight finish for up to s.Drain; cuts those still running
// (their context ends, so their upstream calls do; each still records
// its spend event on the way out) and waits cutGrace for them to return;
// then flushes the spend publisher for up to s.Flush, a deadline of its
// own, past which each event left is logged whole (gw.Close).
func (d *drainer) shutdown(srv *http.Server, closeSpend func(context.Context) error, s appenv.Shutdown, log *slog.Logger) error {
	ctx := context.Background()
	log.LogAttrs(ctx, slog.LevelInfo, "shutdown: draining", slog.Int64("in_flight", d.inFlight.Load()), slog.Duration("drain_timeout", s.Drain))
	drain, cancel := context.WithTimeout(ctx, s.Drain)
	err := srv.Shutdown(drain)
	cancel()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		log.LogAttrs(ctx, slog.LevelWarn, "shutdown: drain timeout; cutting the requests still running",
			slog.Int64("in_flight", d.inFlight.Load()))
		d.cancel()
		grace, cancel := context.WithTimeout(ctx, cutGrace)
		if srv.Shutdown(grace) != nil { // waits for the cut handlers to return
			// A handler blocked writing to a client that stopped reading:
			// closing its connection fails the write.
			_ = srv.Close()
			for i := 0; i < 100 && d.inFlight.Load() > 0; i++ {
				time.Sleep(10 * time.Millisecond)
			}
		}
		cancel()
		if n := d.inFlight.Load(); n > 0 {
			log.LogAttrs(ctx, slog.LevelError, "shutdown: requests still running after being cut; their spend events may be missing",
				slog.Int64("requests", n))
		}
	case err != nil:
		log.LogAttrs(ctx, slog.LevelWarn, "shutdown", slog.String("error", err.Error()))
	}
	flush, cancel := context.WithTimeout(ctx, s.Flush)
	defer cancel()
	if err := closeSpend(flush); err != nil { // record the spend still queued
		return fmt.Errorf("spend: %w", err)
	}
	log.LogAttrs(ctx, slog.LevelInfo, "shutdown: spend flushed")
	return nil
}

// lambdaShutdown waits for SIGTERM in Lambda, which Lambda sends only when
// an extension is registered (the stack registers none; a layer such as a
// monitoring agent may), with no invocation running and about 500 ms
// before SIGKILL. Every invocation has sent its spend events and metrics
// before it ended (AfterResponse: the runtime asks for the next event only
// after), so nothing should be held; this sends whatever is, within
// 300 ms, and exits rather than wait for the SIGKILL.
func lambdaShutdown(ctx context.Context, gw *app.Gateway, log *slog.Logger) {
	<-ctx.Done()
	flush, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	if err := gw.Close(flush); err != nil {
		log.LogAttrs(flush, slog.LevelError, "shutdown: spend", slog.String("error", err.Error()))
	}
	cancel()
	gw.FlushMetrics()
	os.Exit(0)
}
