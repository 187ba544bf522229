package keys_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/keystest"
)

func TestMemory(t *testing.T) {
	stores := map[*testing.T]*keys.Memory{}
	keystest.Run(t, func(t *testing.T) keystest.Store {
		if m, ok := stores[t]; ok {
			return m
		}
		m := keys.NewMemory()
		stores[t] = m
		return m
	})
}
