package spendtest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// testEndUserTracked: an event naming an end user with no record creates
// it, with its spend, as LiteLLM's spend update upserts its end user table
// (/customer/info answers it); concurrent consumers recording events of the
// same new end user create it once and count every cost once; an id no
// record can have creates nothing.
func testEndUserTracked(t *testing.T, h Harness) {
	c, k := oneKey(t, h)
	now := time.Now().UTC()
	eu, bad := ID("ishaan3"), ID("a#b")
	if _, err := h.Keys.GetEndUser(c, eu); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("end user before any spend: %v", err)
	}
	var wg sync.WaitGroup
	stores := []spend.Store{h.Store, h.Other(t), h.Store, h.Other(t)}
	for i, st := range stores {
		wg.Add(1)
		go func(st spend.Store, cost int64) {
			defer wg.Done()
			e := Event(k, eu, now, cost)
			if _, err := st.Record(c, []spend.Event{e, e}); err != nil {
				t.Error(err)
			}
		}(st, int64(100*(i+1)))
	}
	wg.Wait()
	if _, err := h.Store.Record(c, []spend.Event{Event(k, bad, now, 5)}); err != nil {
		t.Fatal(err)
	}
	got, err := h.Keys.GetEndUser(c, eu)
	if err != nil {
		t.Fatalf("end user after its spend: %v", err)
	}
	if n := keys.Nanos(got.Spend); n != 1000 {
		t.Errorf("end user spend %d nano-USD, want 1000 (100+200+300+400, each once)", n)
	}
	if got.CreatedAt.IsZero() {
		t.Errorf("end user created_at not set")
	}
	if ok, err := h.Keys.HasEndUsers(c); err != nil || !ok {
		t.Errorf("HasEndUsers = %v, %v; want true", ok, err)
	}
	list, err := h.Keys.ListEndUsers(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if e.ID == bad {
			t.Errorf("an end user with an id no record can have was created: %q", bad)
		}
	}
}
