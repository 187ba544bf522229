package keys

import (
	"context"
	"testing"
	"time"
)

// A regenerated key's old hash forwards spend for keys.MoveTTL, then no
// longer (as a deleted key's hash).
func TestMemoryMoveExpires(t *testing.T) {
	c := context.Background()
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	m := NewMemory()
	m.now = func() time.Time { return now }
	old, nk := Key{Hash: HashSecret("sk-old")}, Key{Hash: HashSecret("sk-new")}
	if err := m.CreateKey(c, old); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RegenerateKey(c, old.Hash, nk); err != nil {
		t.Fatal(err)
	}
	spend := func(at time.Time) int64 {
		now = at
		if _, err := m.ApplySpend(c, []SpendDelta{{Ref: Ref{KindKey, old.Hash}, Nanos: 10, At: at}}); err != nil {
			t.Fatal(err)
		}
		k, err := m.GetKey(c, nk.Hash)
		if err != nil {
			t.Fatal(err)
		}
		return Nanos(k.Spend)
	}
	start := now
	if got := spend(start.Add(MoveTTL - time.Second)); got != 10 {
		t.Errorf("within MoveTTL: new key's spend %d, want 10", got)
	}
	if got := spend(start.Add(MoveTTL)); got != 10 {
		t.Errorf("after MoveTTL: new key's spend %d, want 10 (not forwarded)", got)
	}
}

// A chain of regenerations is followed up to MaxMoves markers.
func TestMemoryMoveChainBound(t *testing.T) {
	c := context.Background()
	m := NewMemory()
	k := Key{Hash: HashSecret("sk-0")}
	if err := m.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	first := k.Hash
	for i := range MaxMoves + 1 {
		nk := Key{Hash: HashSecret("sk-" + string(rune('a'+i)))}
		if _, err := m.RegenerateKey(c, k.Hash, nk); err != nil {
			t.Fatal(err)
		}
		if i == MaxMoves-1 {
			// MaxMoves markers from first lead here.
			m.mu.Lock()
			got := m.follow(Ref{KindKey, first})
			m.mu.Unlock()
			if got.ID != nk.Hash {
				t.Errorf("after %d regenerations: %s leads to %.8s, want %.8s", i+1, first[:8], got.ID, nk.Hash)
			}
		}
		k = nk
	}
	m.mu.Lock()
	got := m.follow(Ref{KindKey, first})
	m.mu.Unlock()
	if got.ID != first {
		t.Errorf("past MaxMoves: %.8s leads to %.8s, want itself (not followed)", first, got.ID)
	}
}
