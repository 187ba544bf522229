package providerstest

import (
	"sync"
	"testing"
)

// Log is what a fake upstream received, an entry a request, kept safely
// for its handler's goroutines. The zero Log is empty and ready.
type Log[T any] struct {
	mu      sync.Mutex
	entries []T
}

// Add appends v.
func (l *Log[T]) Add(v T) {
	l.mu.Lock()
	l.entries = append(l.entries, v)
	l.mu.Unlock()
}

// Len is the number of entries.
func (l *Log[T]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// All is a copy of the entries, oldest first.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.entries...)
}

// Latest is the latest entry, if there is one.
func (l *Log[T]) Latest() (v T, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) == 0 {
		return v, false
	}
	return l.entries[len(l.entries)-1], true
}

// Last is the latest entry; with none, t fails with "<who> received
// nothing".
func (l *Log[T]) Last(t testing.TB, who string) T {
	t.Helper()
	v, ok := l.Latest()
	if !ok {
		t.Fatalf("%s received nothing", who)
	}
	return v
}
