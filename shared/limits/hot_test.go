package limits_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/limits"
)

// hotStore is a Backend and Taker over counter items in memory, with the
// semantics of ddblimits' (a cold write refused by an item turned hot, the
// switch recorded in shard 0), that throttles cold writes past coldMax in
// a window, as an item at its write ceiling does.
type hotStore struct {
	mu      sync.Mutex
	items   map[string]*hotItem
	coldMax int64
	cold    map[time.Time]int64
}

type hotItem struct{ req, hot, hb int64 }

func (f *hotStore) item(s limits.Slot, w time.Time) *hotItem {
	k := string(s.Kind) + "#" + s.ID + "#" + strconv.FormatInt(w.Unix(), 10) + "#" + strconv.Itoa(s.Shard)
	it := f.items[k]
	if it == nil {
		it = &hotItem{}
		f.items[k] = it
	}
	return it
}

func (f *hotStore) Attempt(_ context.Context, p *limits.Plan) (limits.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, it := range p.Items {
		if c := f.item(it.Slot, p.Window); c.hot > 0 {
			out := limits.BlockedByItem(i, limits.ReasonRPM)
			out.HotShards, out.HotBase = int(c.hot), c.hb
			return out, nil
		}
	}
	if f.cold[p.Window] >= f.coldMax {
		return limits.Outcome{}, limits.ErrThrottled
	}
	f.cold[p.Window]++
	for i, it := range p.Items {
		if f.item(it.Slot, p.Window).req+1 > it.RPMCap {
			return limits.BlockedByItem(i, limits.ReasonRPM), nil
		}
	}
	for _, it := range p.Items {
		f.item(it.Slot, p.Window).req++
	}
	return limits.AllowedOutcome, nil
}

func (f *hotStore) Take(_ context.Context, s limits.Slot, w, _ time.Time, cap, n int64) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.item(s, w)
	if c.req+n > cap {
		return 0, c.req, nil
	}
	c.req += n
	return n, 0, nil
}

func (f *hotStore) Switch(_ context.Context, s limits.Slot, w, _ time.Time, shards int) (int, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.item(s, w)
	if c.hot == 0 {
		c.hot, c.hb = int64(shards), c.req
	}
	return int(c.hot), c.hb, nil
}

// counted sums a scope's shards in window w.
func (f *hotStore) counted(kind limits.Kind, id string, w time.Time) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for shard := range limits.MaxShards {
		n += f.item(limits.Slot{Kind: kind, ID: id, Shard: shard}, w).req
	}
	return n
}

// Three instances, a key and a team limited to 600 RPM, 1,500 requests in
// each of two windows, and an item that throttles cold writes past the
// 40th of a window: the scopes turn hot (the first window by throttling,
// the second at once, having been hot), no window admits more than its
// limit or less than the limit less the stated tail, and no request sees
// an error. A request of the first window arriving after the second began
// is still counted in the first.
func TestHotScopes(t *testing.T) {
	f := &hotStore{items: map[string]*hotItem{}, coldMax: 40, cold: map[time.Time]int64{}}
	ads := make([]*limits.Admitter, 3)
	for i := range ads {
		ads[i] = &limits.Admitter{Backend: f, ItemWrites: 1000}
	}
	key := limits.Scope{Kind: limits.KindKey, ID: "k", RPM: 600}
	team := limits.Scope{Kind: limits.KindTeam, ID: "t", RPM: 600}
	w0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tail := 3 * limits.HotBlockMax(600)
	for win := range 2 {
		w := w0.Add(time.Duration(win) * time.Minute)
		var admitted, errs atomic.Int64
		var next atomic.Int64
		var wg sync.WaitGroup
		for _, a := range ads {
			for range 8 {
				wg.Go(func() {
					for next.Add(1) <= 1500 {
						d, err := a.Admit(context.Background(), limits.AdmitRequest{Now: w.Add(30 * time.Second), Scopes: []limits.Scope{key, team}})
						switch {
						case err != nil || d.FailedOpen:
							errs.Add(1)
						case d.Allowed:
							admitted.Add(1)
						}
					}
				})
			}
		}
		wg.Wait()
		n, k, tm := admitted.Load(), f.counted(key.Kind, key.ID, w), f.counted(team.Kind, team.ID, w)
		t.Logf("window %d: admitted %d; counted key %d, team %d", win, n, k, tm)
		if errs.Load() != 0 || n > 600 || n < 600-tail || k > 600 || tm > 600 || k < n || tm < n {
			t.Fatalf("window %d: admitted %d (want %d..600), %d errors or failed open, counted key %d team %d", win, n, 600-tail, errs.Load(), k, tm)
		}
		// Each instance asks once more in the full window for each scope
		// alone, so that each has seen both scopes hot there: a refusal
		// names the first hot item only, so an instance whose goroutines
		// ran late (a loaded machine) may have learnt the key and not the
		// team. What the second window checks is that an instance that
		// saw a scope hot turns it hot at once, not how the scheduler ran
		// the first.
		for _, a := range ads {
			for _, s := range []limits.Scope{key, team} {
				if _, err := a.Admit(context.Background(), limits.AdmitRequest{Now: w.Add(50 * time.Second), Scopes: []limits.Scope{s}}); err != nil {
					t.Fatalf("window %d: a late request: %v", win, err)
				}
			}
		}
	}
	if f.cold[w0.Add(time.Minute)] > 1 {
		t.Errorf("the second window had %d cold writes: a scope hot in the window before should turn hot at once", f.cold[w0.Add(time.Minute)])
	}
	// A late request of the first window: full there, so refused, not an error.
	d, err := ads[0].Admit(context.Background(), limits.AdmitRequest{Now: w0.Add(59 * time.Second), Scopes: []limits.Scope{key}})
	if err != nil || d.Allowed || d.FailedOpen {
		t.Fatalf("a late request of the full first window: %+v, %v; want refused", d, err)
	}
}
