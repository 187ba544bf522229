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

// TestLinkedOrganization: an organization linking a budget is read with
// the budget's limits in place of its own (the gateway's organization
// check and admission read it through Linked).
func TestLinkedOrganization(t *testing.T) {
	ctx := context.Background()
	m := keys.NewMemory()
	max := 2.5
	if err := m.CreateBudget(ctx, keys.BudgetRecord{ID: "b", Settings: keys.Settings{RPMLimit: 9, Budget: keys.Budget{MaxBudget: &max}}}); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateOrganization(ctx, keys.Organization{ID: "o", Settings: keys.Settings{BudgetID: "b", RPMLimit: 1}}); err != nil {
		t.Fatal(err)
	}
	o, err := keys.Linked{Reader: m}.GetOrganization(ctx, "o")
	if err != nil || o.RPMLimit != 9 || o.MaxBudget == nil || *o.MaxBudget != max {
		t.Fatalf("GetOrganization = %+v, %v; want the budget's rpm 9 and max_budget %v", o.Settings, err, max)
	}
}
