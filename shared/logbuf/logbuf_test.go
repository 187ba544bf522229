package logbuf

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

type recorder struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes++
	return r.b.Write(p)
}

func TestLinesWholeAndBatched(t *testing.T) {
	rec := &recorder{}
	w := New(rec, time.Hour) // only Close flushes here
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				fmt.Fprintf(w, "line g=%d i=%d %s\n", g, i, strings.Repeat("x", 40))
			}
		}(g)
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(rec.b.String(), "\n"), "\n")
	if len(lines) != 4000 {
		t.Fatalf("lines = %d, want 4000", len(lines))
	}
	for _, l := range lines {
		var g, i int
		var x string
		if n, err := fmt.Sscanf(l, "line g=%d i=%d %s", &g, &i, &x); n != 3 || err != nil || len(x) != 40 {
			t.Fatalf("torn line %q", l)
		}
	}
	if rec.writes >= 4000/10 {
		t.Fatalf("%d writes for 4000 lines: not batched", rec.writes)
	}
}

func TestFlushOnInterval(t *testing.T) {
	rec := &recorder{}
	w := New(rec, time.Millisecond)
	defer w.Close()
	fmt.Fprintln(w, "hello")
	deadline := time.Now().Add(10 * time.Second) // a bound on a hang, not a timing assertion
	for {
		rec.mu.Lock()
		got := rec.b.String()
		rec.mu.Unlock()
		if got == "hello\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not flushed: %q", got)
		}
		time.Sleep(time.Millisecond)
	}
}
