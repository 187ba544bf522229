package spend_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
)

func TestMemoryConformance(t *testing.T) {
	spendtest.Run(t, func(t *testing.T) spendtest.Harness {
		ks := keys.NewMemory()
		st := spend.NewMemory(ks)
		return spendtest.Harness{Store: st, Other: func(*testing.T) spend.Store { return st }, Keys: ks}
	})
}
