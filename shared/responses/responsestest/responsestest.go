// Package responsestest is the conformance suite every responses.Store
// passes, unchanged, on the memory store and on DynamoDB Local.
package responsestest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/conformance"
	"github.com/sluice-gw/sluice/shared/responses"
)

// Run runs the suite, each case on the open function newState makes for
// it (see conformance.Cases).
func Run(t *testing.T, newState func(t *testing.T) (open func() responses.Store)) {
	conformance.Run(t, newState, conformance.Cases[func() responses.Store]{
		"RoundTrip":              testRoundTrip,
		"Missing":                testMissing,
		"Expiry":                 testExpiry,
		"Delete":                 testDelete,
		"Replace":                testReplace,
		"SharedBetweenInstances": testShared,
		"Large":                  testLarge,
		"Concurrent":             testConcurrent,
		"EmptyID":                testEmptyID,
	})
}

var base = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func ctx(t *testing.T) context.Context { return conformance.Context(t) }

func newID() string { return responses.EncodeID("anthropic", "dep-1", conformance.ID("resp")) }

func record(id string) responses.Record {
	return responses.Record{
		ID: id, KeyHash: "k-hash", TeamID: "team-1", Deployment: "dep-1", Previous: "resp_prev",
		Input:    []byte(`[{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"héllo"}]}]`),
		Response: []byte(`{"id":"` + id + `","object":"response","output":[]}`),
		Created:  base, Expires: base.Add(time.Hour),
	}
}

func equal(a, b responses.Record) bool {
	return a.ID == b.ID && a.KeyHash == b.KeyHash && a.TeamID == b.TeamID && a.Deployment == b.Deployment &&
		a.Previous == b.Previous && bytes.Equal(a.Input, b.Input) && bytes.Equal(a.Response, b.Response) &&
		a.Created.Equal(b.Created) && a.Expires.Equal(b.Expires)
}

func mustPut(t *testing.T, s responses.Store, r responses.Record) {
	t.Helper()
	if err := s.Put(ctx(t), r); err != nil {
		t.Fatalf("Put: %v", err)
	}
}

// testRoundTrip: every field reads back as written.
func testRoundTrip(t *testing.T, open func() responses.Store) {
	s := open()
	r := record(newID())
	mustPut(t, s, r)
	got, err := s.Get(ctx(t), r.ID, base.Add(time.Minute))
	if err != nil || !equal(got, r) {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, r)
	}
	// A record with only an id and its bodies (an open gateway's).
	bare := responses.Record{ID: newID(), Input: []byte(`[]`), Response: []byte(`{}`), Created: base, Expires: base.Add(time.Hour)}
	mustPut(t, s, bare)
	if got, err := s.Get(ctx(t), bare.ID, base); err != nil || !equal(got, bare) {
		t.Fatalf("bare record: %+v, %v", got, err)
	}
}

func testMissing(t *testing.T, open func() responses.Store) {
	s := open()
	if _, err := s.Get(ctx(t), newID(), base); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("Get of nothing: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx(t), newID()); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("Delete of nothing: %v, want ErrNotFound", err)
	}
}

// testExpiry: a record is found until its expiry, exactly, and not after.
func testExpiry(t *testing.T, open func() responses.Store) {
	s := open()
	r := record(newID())
	mustPut(t, s, r)
	if _, err := s.Get(ctx(t), r.ID, r.Expires.Add(-time.Millisecond)); err != nil {
		t.Errorf("Get just before expiry: %v", err)
	}
	for _, at := range []time.Time{r.Expires, r.Expires.Add(time.Second)} {
		if _, err := s.Get(ctx(t), r.ID, at); !errors.Is(err, apierr.ErrNotFound) {
			t.Errorf("Get at %s (expires %s): %v, want ErrNotFound", at, r.Expires, err)
		}
	}
}

func testDelete(t *testing.T, open func() responses.Store) {
	s := open()
	r := record(newID())
	mustPut(t, s, r)
	if err := s.Delete(ctx(t), r.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(ctx(t), r.ID, base); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx(t), r.ID); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
}

func testReplace(t *testing.T, open func() responses.Store) {
	s := open()
	r := record(newID())
	mustPut(t, s, r)
	r2 := r
	r2.Response, r2.TeamID = []byte(`{"v":2}`), ""
	mustPut(t, s, r2)
	if got, err := s.Get(ctx(t), r.ID, base); err != nil || !equal(got, r2) {
		t.Fatalf("after replace: %+v, %v; want %+v", got, err, r2)
	}
}

// testShared: what one instance stores, another reads at once (a
// conversation continues on another instance) and may delete.
func testShared(t *testing.T, open func() responses.Store) {
	a, b := open(), open()
	r := record(newID())
	mustPut(t, a, r)
	if got, err := b.Get(ctx(t), r.ID, base); err != nil || !equal(got, r) {
		t.Fatalf("B reads %+v, %v", got, err)
	}
	if err := b.Delete(ctx(t), r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx(t), r.ID, base); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("A after B's delete: %v", err)
	}
}

// testLarge: a long conversation's response (1 MB of JSON text) is kept
// whole.
func testLarge(t *testing.T, open func() responses.Store) {
	s := open()
	r := record(newID())
	r.Response = []byte(`{"output":[{"type":"message","content":[{"type":"output_text","text":"` + strings.Repeat("All work and no play makes Jack a dull boy. ", 24000) + `"}]}]}`)
	mustPut(t, s, r)
	if got, err := s.Get(ctx(t), r.ID, base); err != nil || !bytes.Equal(got.Response, r.Response) {
		t.Fatalf("large response: %d bytes back, %v", len(got.Response), err)
	}
}

func testConcurrent(t *testing.T, open func() responses.Store) {
	ids := make([]string, 16)
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for i := range ids {
		ids[i] = newID()
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			errs <- open().Put(ctx(t), record(id))
		}(ids[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := open()
	for _, id := range ids {
		if got, err := s.Get(ctx(t), id, base); err != nil || got.ID != id {
			t.Errorf("Get %s: %+v, %v", id, got, err)
		}
	}
}

func testEmptyID(t *testing.T, open func() responses.Store) {
	if err := open().Put(ctx(t), responses.Record{}); !errors.Is(err, apierr.ErrInvalid) {
		t.Errorf("Put without id: %v, want ErrInvalid", err)
	}
}
