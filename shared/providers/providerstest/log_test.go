package providerstest

import (
	"slices"
	"sync"
	"testing"
)

// TestLog: entries added from many goroutines are all kept; Latest is the
// last one added, and an empty Log has none.
func TestLog(t *testing.T) {
	var l Log[int]
	if _, ok := l.Latest(); ok || l.Len() != 0 {
		t.Fatal("an empty Log has an entry")
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { l.Add(i) })
	}
	wg.Wait()
	all := l.All()
	slices.Sort(all)
	if len(all) != 50 || all[0] != 0 || all[49] != 49 || l.Len() != 50 {
		t.Fatalf("All = %v", all)
	}
	l.Add(7)
	if v, ok := l.Latest(); !ok || v != 7 || l.Last(t, "x") != 7 {
		t.Errorf("Latest = %v, %v; want 7", v, ok)
	}
}
