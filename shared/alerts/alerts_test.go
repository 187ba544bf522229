package alerts_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/alerts"
	"github.com/sluice-gw/sluice/shared/alerts/alertstest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
)

// TestConformance runs the suite on the memory stores of local mode.
func TestConformance(t *testing.T) {
	alertstest.Run(t, func(t *testing.T) alertstest.Harness {
		ks := keys.NewMemory()
		st := spend.NewMemory(ks)
		claims := alerts.NewMemory()
		return alertstest.Harness{
			Spend:  spendtest.Harness{Store: st, Other: func(*testing.T) spend.Store { return st }, Keys: ks},
			Claims: func(*testing.T) alerts.Claims { return claims },
			States: func(*testing.T) alerts.States { return ks },
		}
	})
}
