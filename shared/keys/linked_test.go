package keys_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// TestLinkedNoCostUnlinked: resolving linked budgets costs a warm read of
// a record that links none nothing more than the cached read itself (no
// allocation, no store read), and a linked one reads its budget from the
// cache.
func TestLinkedNoCostUnlinked(t *testing.T) {
	ctx := context.Background()
	m := keys.NewMemory()
	c := keys.NewCached(m, time.Hour, nil)
	h := keys.HashSecret("sk-unlinked")
	if err := m.CreateKey(ctx, keys.Key{Hash: h, Settings: keys.Settings{RPMLimit: 5}}); err != nil {
		t.Fatal(err)
	}
	l := keys.Linked{Reader: c}
	if _, err := l.GetKey(ctx, h); err != nil {
		t.Fatal(err)
	}
	plain := testing.AllocsPerRun(100, func() { _, _ = c.GetKey(ctx, h) })
	linked := testing.AllocsPerRun(100, func() { _, _ = l.GetKey(ctx, h) })
	if linked > plain {
		t.Fatalf("Linked.GetKey allocates %v per read, the cached read alone %v", linked, plain)
	}

	if err := m.CreateBudget(ctx, keys.BudgetRecord{ID: "b", Settings: keys.Settings{RPMLimit: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateEndUser(ctx, keys.EndUser{ID: "e", Settings: keys.Settings{BudgetID: "b", RPMLimit: 1}}); err != nil {
		t.Fatal(err)
	}
	if e, err := l.GetEndUser(ctx, "e"); err != nil || e.RPMLimit != 9 {
		t.Fatalf("GetEndUser = %+v, %v; want the budget's rpm 9", e.Settings, err)
	}
	if err := m.DeleteBudget(ctx, "b"); err != nil { // behind the cache's back
		t.Fatal(err)
	}
	if e, err := l.GetEndUser(ctx, "e"); err != nil || e.RPMLimit != 9 {
		t.Fatalf("GetEndUser within the TTL = %+v, %v; want the cached budget's rpm 9", e.Settings, err)
	}
}
