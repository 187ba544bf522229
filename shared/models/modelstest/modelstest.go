// Package modelstest is the conformance suite of models.Store: the memory
// store and ddbmodels pass the same tests.
package modelstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/models"
)

// Run runs the suite; open returns a new, empty store for each test.
func Run(t *testing.T, open func(t *testing.T) models.Store) {
	ctx := context.Background()
	rec := func(id string) models.Record {
		return models.Record{ID: id, ModelName: "group-" + id,
			Params:    map[string]any{"model": "openai/gpt-4o", "api_key": "sealed-" + id, "rpm": 10.0, "tags": []any{"a"}},
			Info:      map[string]any{"access_groups": []any{"g"}, "base_model": "gpt-4o"},
			CreatedAt: time.Unix(1700000000, 0).UTC(), UpdatedAt: time.Unix(1700000001, 0).UTC(), CreatedBy: "admin", UpdatedBy: "admin"}
	}
	// created opens a store holding rec(id), and returns it with the record
	// as stored and the store's version after the create.
	created := func(t *testing.T, id string) (models.Store, models.Record, int64) {
		t.Helper()
		s := open(t)
		if err := s.Create(ctx, rec(id)); err != nil {
			t.Fatal(err)
		}
		r, _ := s.Get(ctx, id)
		v, _ := s.Version(ctx)
		return s, r, v
	}
	t.Run("CreateGetList", func(t *testing.T) {
		s := open(t)
		v0, err := s.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"b", "a", "id#with/separators"} {
			if err := s.Create(ctx, rec(id)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Create(ctx, rec("a")); !errors.Is(err, models.ErrExists) {
			t.Fatalf("second create of a: %v, want ErrExists", err)
		}
		got, err := s.Get(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		want := rec("a")
		want.Rev = 1
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Get = %+v\nwant %+v", got, want)
		}
		list, v, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 3 || list[0].ID != "a" || list[1].ID != "b" || list[2].ID != "id#with/separators" {
			t.Fatalf("List = %+v", list)
		}
		if v != v0+3 {
			t.Fatalf("version %d after 3 creates from %d", v, v0)
		}
		if _, err := s.Get(ctx, "missing"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("Get(missing): %v", err)
		}
	})
	t.Run("UpdateDeleteRev", func(t *testing.T) {
		s, r, v1 := created(t, "x")
		r.Params["rpm"] = 20.0
		if err := s.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(ctx, r); !errors.Is(err, models.ErrConflict) {
			t.Fatalf("update with a stale rev: %v, want ErrConflict", err)
		}
		got, _ := s.Get(ctx, "x")
		if got.Rev != 2 || got.Params["rpm"] != 20.0 {
			t.Fatalf("after update: %+v", got)
		}
		if v2, _ := s.Version(ctx); v2 <= v1 {
			t.Fatalf("version %d after update, was %d", v2, v1)
		}
		if err := s.Update(ctx, rec("nope")); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("update of a missing record: %v", err)
		}
		if err := s.Delete(ctx, "x", 1); !errors.Is(err, models.ErrConflict) {
			t.Fatalf("delete with a stale rev: %v", err)
		}
		if err := s.Delete(ctx, "x", 2); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "x", 2); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		if list, _, _ := s.List(ctx); len(list) != 0 {
			t.Fatalf("list after delete: %+v", list)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		bad := rec("")
		if err := s.Create(ctx, bad); err == nil {
			t.Fatal("created a record without id")
		}
		long := rec(string(make([]byte, models.MaxIDLen+1)))
		if err := s.Create(ctx, long); err == nil {
			t.Fatal("created a record with an over-long id")
		}
	})
	t.Run("ConcurrentUpdatesOneWins", func(t *testing.T) {
		s, base, v0 := created(t, "c")
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := base
				r.Params = map[string]any{"model": fmt.Sprintf("openai/m%d", i)}
				err := s.Update(ctx, r)
				if err == nil {
					mu.Lock()
					wins++
					mu.Unlock()
				} else if !errors.Is(err, models.ErrConflict) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("%d concurrent updates of one rev succeeded, want 1", wins)
		}
		if v, _ := s.Version(ctx); v != v0+1 {
			t.Fatalf("version %d, want %d", v, v0+1)
		}
	})
}
