// Package conformance runs the conformance suites of the stores' ports
// (cooldowntest, responsestest, limitstest, spendtest, ...): each case on
// fresh shared state, so that one suite checks the memory store and the
// DynamoDB store alike (go-cloud's drivertest).
package conformance

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"
)

// Cases are a suite's tests by name, each given the state made fresh for
// it: a harness, or an open function that returns another store instance
// on the test's shared state each time it is called (for DynamoDB: a new
// SDK client), as another gateway instance would hold.
type Cases[H any] map[string]func(t *testing.T, h H)

// Run runs each case in a subtest of its name (in name order), on state
// that newState makes fresh for it.
func Run[H any](t *testing.T, newState func(t *testing.T) H, cases Cases[H]) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		t.Run(name, func(t *testing.T) { cases[name](t, newState(t)) })
	}
}

// Context is a suite's context: canceled when the test ends, and within
// 30 s (a store that stops answering fails the case rather than the run).
func Context(t testing.TB) context.Context { return Within(t, 30*time.Second) }
