package spendtest

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/spend"
)

// testLogPages: 2,500 logs (more than DefaultLogLimit; pairs share an end
// time, so the order's tie-break counts) read page by page: every log
// exactly once, in order, the total exact on every page, and a page past
// the end empty with the same total.
func testLogPages(t *testing.T, h Harness) {
	const n = 2500
	c := ctx(t)
	w := NewWorld(t, h.Keys, 1, 0)
	day := time.Date(2031, 7, 8, 9, 0, 0, 0, time.UTC)
	evs := make([]spend.Event, n)
	for i := range evs {
		evs[i] = Event(&w.Keys[0], "", day.Add(time.Duration(i/2)*time.Millisecond), 1)
	}
	if res, err := h.Store.Record(c, evs); err != nil || res.Recorded != n {
		t.Fatalf("Record: %+v, %v", res, err)
	}
	q := spend.LogQuery{KeyHash: w.Keys[0].Hash, From: day, To: day.Add(time.Hour)}
	if logs, err := h.Store.Logs(c, q); err != nil || len(logs) != spend.DefaultLogLimit {
		t.Fatalf("Logs without a limit: %d logs, %v; want the first %d", len(logs), err, spend.DefaultLogLimit)
	}
	for _, size := range []int{1000, 300} {
		seen := map[string]bool{}
		var prev *spend.Event
		for off := 0; off < n; off += size {
			q.Offset, q.Limit = off, size
			p, err := h.Store.LogPage(c, q)
			if err != nil {
				t.Fatal(err)
			}
			if p.Total != n || len(p.Logs) != min(size, n-off) {
				t.Fatalf("page at %d of %d: %d logs, total %d; want %d, total %d", off, size, len(p.Logs), p.Total, min(size, n-off), n)
			}
			for i := range p.Logs {
				e := &p.Logs[i]
				if seen[e.RequestID] {
					t.Fatalf("page size %d: %s seen twice", size, e.RequestID)
				}
				seen[e.RequestID] = true
				if prev != nil && (e.End.After(prev.End) || e.End.Equal(prev.End) && e.RequestID < prev.RequestID) {
					t.Fatalf("page size %d: %s (%v) after %s (%v): not newest first", size, e.RequestID, e.End, prev.RequestID, prev.End)
				}
				prev = e
			}
		}
		if len(seen) != n {
			t.Fatalf("page size %d: %d distinct logs, want %d", size, len(seen), n)
		}
	}
	q.Offset, q.Limit = n, 100
	if p, err := h.Store.LogPage(c, q); err != nil || len(p.Logs) != 0 || p.Total != n {
		t.Fatalf("past the end: %d logs, total %d, %v", len(p.Logs), p.Total, err)
	}
}
