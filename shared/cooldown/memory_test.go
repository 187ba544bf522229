package cooldown_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/cooldown/cooldowntest"
)

func TestMemory(t *testing.T) {
	stores := map[*testing.T]*cooldown.Memory{}
	cooldowntest.Run(t, func(t *testing.T) cooldown.Store {
		if m, ok := stores[t]; ok {
			return m
		}
		m := cooldown.NewMemory()
		stores[t] = m
		return m
	})
}

// TestCachedConformance runs the suite on Cached views (TTL 0: every read
// goes to the shared store) of one shared memory store.
func TestCachedConformance(t *testing.T) {
	shared := map[*testing.T]*cooldown.Memory{}
	cooldowntest.Run(t, func(t *testing.T) cooldown.Store {
		m, ok := shared[t]
		if !ok {
			m = cooldown.NewMemory()
			shared[t] = m
		}
		return cooldown.NewCached(m, cooldown.CachedOptions{})
	})
}
