package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"
)

// ID returns a unique id with prefix p ("p-" and 12 hex digits): each
// case's records get their own, so that cases on one shared table never
// meet.
func ID(p string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return p + "-" + hex.EncodeToString(b[:])
}

// Within is Context with the bound d, for suites whose cases run longer.
func Within(t testing.TB, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}
