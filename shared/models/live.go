package models

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Reload defaults: an instance serves a change within DefaultInterval plus
// the store's answer; a request that falls due waits for the check at most
// DefaultWait (then it is served the current snapshot, and the check goes
// on without it).
const (
	DefaultInterval = 10 * time.Second
	DefaultWait     = 250 * time.Millisecond
)

// Build makes a snapshot of the stored records (prev is the snapshot it
// replaces, for what survives a reload). It must not change prev.
type Build[T any] func(ctx context.Context, recs []Record, prev T) (T, error)

// LiveOptions tune a Live.
type LiveOptions struct {
	Interval time.Duration // how often a serving instance checks the version; 0: DefaultInterval
	Wait     time.Duration // the longest a request waits for a due check; 0: DefaultWait
	Now      func() time.Time
	Logger   *slog.Logger
}

// Live is one instance's view of the store: an immutable snapshot built
// from the records, swapped whole when they change. A request reads it
// once (Current), so it never sees a half-applied change.
//
// Reloading is lazy, for Lambda (where a goroutine between invocations is
// frozen): the first Current after Interval claims the check (one atomic
// compare-and-swap; the others keep the fast path: an atomic load and a
// clock read), reads the version (one small read) and, only when it moved,
// the records, and builds and swaps a new snapshot. The claiming request
// waits for it at most Wait. A failed check keeps the snapshot and is
// retried an Interval later. So a store is read at most once per Interval
// per instance, never once per request.
type Live[T any] struct {
	store    Store
	build    Build[T]
	interval time.Duration
	wait     time.Duration
	now      func() time.Time
	log      *slog.Logger

	cur     atomic.Pointer[snapshot[T]]
	checked atomic.Int64 // unix ns of the last check's claim
	running atomic.Bool  // a background check is in flight
	mu      sync.Mutex   // serialises builds, so an older one never replaces a newer
}

type snapshot[T any] struct {
	v       T
	version int64
}

// NewLive reads the store and builds the first snapshot (the one read of
// a cold start).
func NewLive[T any](ctx context.Context, store Store, build Build[T], o LiveOptions) (*Live[T], error) {
	recs, version, err := store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("stored models: %w", err)
	}
	return NewLiveFrom(ctx, store, build, recs, version, o)
}

// NewLiveFrom builds the first snapshot from records already read (at
// version; a negative version: none could be read, and the first Current
// checks at once).
func NewLiveFrom[T any](ctx context.Context, store Store, build Build[T], recs []Record, version int64, o LiveOptions) (*Live[T], error) {
	l := &Live[T]{store: store, build: build, interval: o.Interval, wait: o.Wait, now: o.Now, log: o.Logger}
	if l.interval <= 0 {
		l.interval = DefaultInterval
	}
	if l.wait <= 0 {
		l.wait = DefaultWait
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	var zero T
	v, err := build(ctx, recs, zero)
	if err != nil {
		return nil, err
	}
	l.cur.Store(&snapshot[T]{v: v, version: version})
	if version >= 0 {
		l.checked.Store(l.now().UnixNano())
	} // else (the records could not be read): the first Current checks
	return l, nil
}

// Interval is how often an instance checks the store.
func (l *Live[T]) Interval() time.Duration { return l.interval }

// Current returns the snapshot to serve a request with, checking the store
// first when a check is due (see Live).
func (l *Live[T]) Current(ctx context.Context) T {
	last := l.checked.Load()
	now := l.now().UnixNano()
	if now-last < int64(l.interval) || l.running.Load() || !l.checked.CompareAndSwap(last, now) {
		return l.cur.Load().v
	}
	l.running.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer l.running.Store(false)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.interval)
		defer cancel()
		if err := l.check(cctx); err != nil {
			l.log.LogAttrs(cctx, slog.LevelWarn, "stored models: reload failed; serving the last snapshot", slog.String("error", err.Error()))
		}
	}()
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
	return l.cur.Load().v
}

// check reads the version and reloads when it moved.
func (l *Live[T]) check(ctx context.Context) error {
	v, err := l.store.Version(ctx)
	if err != nil {
		return err
	}
	if v == l.cur.Load().version {
		return nil
	}
	return l.Reload(ctx)
}

// Reload reads the records and swaps in their snapshot now (the admin API
// after its own write, so that its instance serves the change at once).
func (l *Live[T]) Reload(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	recs, version, err := l.store.List(ctx)
	if err != nil {
		return err
	}
	prev := l.cur.Load()
	if version <= prev.version {
		return nil // already this version, or a newer one
	}
	v, err := l.build(ctx, recs, prev.v)
	if err != nil {
		return err
	}
	l.cur.Store(&snapshot[T]{v: v, version: version})
	l.checked.Store(l.now().UnixNano())
	return nil
}
