package models_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/models"
)

// counting wraps a store, counting its reads; Version blocks while gate
// is held.
type counting struct {
	models.Store
	versions, lists atomic.Int64
	gate            sync.RWMutex
}

func (c *counting) Version(ctx context.Context) (int64, error) {
	c.gate.RLock()
	defer c.gate.RUnlock()
	c.versions.Add(1)
	return c.Store.Version(ctx)
}

func (c *counting) List(ctx context.Context) ([]models.Record, int64, error) {
	c.lists.Add(1)
	return c.Store.List(ctx)
}

type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) Add(d time.Duration) { c.ns.Add(int64(d)) }
func names(recs []models.Record) string {
	s := ""
	for _, r := range recs {
		s += r.ID + ","
	}
	return s
}

func newLive(t *testing.T, st models.Store, clk *clock) *models.Live[string] {
	t.Helper()
	build := func(_ context.Context, recs []models.Record, prev string) (string, error) { return names(recs), nil }
	l, err := models.NewLive(context.Background(), st, build, models.LiveOptions{Interval: 10 * time.Second, Wait: time.Hour, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLiveReadsAtMostOncePerInterval(t *testing.T) {
	ctx := context.Background()
	mem := models.NewMemory()
	st := &counting{Store: mem}
	clk := &clock{}
	clk.Add(time.Hour)
	l := newLive(t, st, clk)
	if st.lists.Load() != 1 {
		t.Fatalf("%d lists at start", st.lists.Load())
	}
	_ = mem.Create(ctx, models.Record{ID: "a", ModelName: "a"})
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = l.Current(ctx) }()
	}
	wg.Wait()
	if st.versions.Load() != 0 || l.Current(ctx) != "" {
		t.Fatalf("within the interval: %d version reads, snapshot %q", st.versions.Load(), l.Current(ctx))
	}
	clk.Add(10 * time.Second)
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = l.Current(ctx) }()
	}
	wg.Wait()
	// Wait is an hour: the claiming request waited for the reload; the
	// others were served without waiting, so read the snapshot again.
	if got := l.Current(ctx); got != "a," || st.versions.Load() != 1 || st.lists.Load() != 2 {
		t.Fatalf("after the interval: snapshot %q, %d version reads, %d lists; want a, 1, 2", got, st.versions.Load(), st.lists.Load())
	}
	clk.Add(10 * time.Second)
	_ = l.Current(ctx)
	if st.versions.Load() != 2 || st.lists.Load() != 2 {
		t.Fatalf("an unchanged version: %d version reads, %d lists; want 2, 2 (no list)", st.versions.Load(), st.lists.Load())
	}
}

// A slow store never holds a request past Wait: with the store stuck, a
// due request is served the current snapshot.
func TestLiveSlowStoreDoesNotBlock(t *testing.T) {
	ctx := context.Background()
	mem := models.NewMemory()
	_ = mem.Create(ctx, models.Record{ID: "a", ModelName: "a"})
	st := &counting{Store: mem}
	clk := &clock{}
	build := func(_ context.Context, recs []models.Record, _ string) (string, error) { return names(recs), nil }
	l, err := models.NewLive(ctx, st, build, models.LiveOptions{Interval: time.Second, Wait: time.Millisecond, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	st.gate.Lock() // the store does not answer
	_ = mem.Create(ctx, models.Record{ID: "b", ModelName: "b"})
	clk.Add(2 * time.Second)
	if got := l.Current(ctx); got != "a," {
		t.Fatalf("served %q while the store hung", got)
	}
	st.gate.Unlock()
	if err := l.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l.Current(ctx); got != "a,b," {
		t.Fatalf("after reload: %q", got)
	}
}
