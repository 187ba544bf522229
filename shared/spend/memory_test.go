package spend_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// The memory store keeps the latest MemoryLogs logs and every total.
func TestMemoryKeepsLatestLogs(t *testing.T) {
	ctx := context.Background()
	ks := keys.NewMemory()
	st := spend.NewMemory(ks)
	base := sample()
	n := spend.MemoryLogs + 50
	for i := range n {
		e := base
		e.RequestID = fmt.Sprintf("req-%06d", i)
		if _, err := st.Record(ctx, []spend.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range map[int]bool{0: false, 49: false, 50: true, n - 1: true} {
		got, err := st.Logs(ctx, spend.LogQuery{RequestID: fmt.Sprintf("req-%06d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if (len(got) == 1) != want {
			t.Errorf("log %d kept = %v, want %v", i, len(got) == 1, want)
		}
	}
	rows, err := st.Daily(ctx, spend.DailyQuery{From: base.End, To: base.End})
	if err != nil {
		t.Fatal(err)
	}
	var reqs int64
	for _, r := range rows {
		reqs += r.Counters.Requests
	}
	if reqs != int64(n) {
		t.Errorf("daily rows count %d requests, want %d", reqs, n)
	}
	// A kept log is still recognised as a duplicate.
	dup := base
	dup.RequestID = fmt.Sprintf("req-%06d", n-1)
	res, err := st.Record(ctx, []spend.Event{dup})
	if err != nil || res.Duplicates != 1 {
		t.Errorf("redelivered kept event: %+v, %v; want 1 duplicate", res, err)
	}
}
