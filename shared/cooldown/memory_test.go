package cooldown_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/cooldown/cooldowntest"
)

func TestMemory(t *testing.T) {
	cooldowntest.Run(t, func(*testing.T) func() cooldown.Store {
		m := cooldown.NewMemory()
		return func() cooldown.Store { return m }
	})
}

// TestCachedConformance runs the suite on Cached views (TTL 0: every read
// goes to the shared store) of one shared memory store.
func TestCachedConformance(t *testing.T) {
	cooldowntest.Run(t, func(*testing.T) func() cooldown.Store {
		m := cooldown.NewMemory()
		return func() cooldown.Store { return cooldown.NewCached(m, cooldown.CachedOptions{}) }
	})
}
