package ddbalerts_test

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/alerts"
	"github.com/sluice-gw/sluice/shared/alerts/alertstest"
	"github.com/sluice-gw/sluice/shared/alerts/ddbalerts"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/ddblocal/ddbharness"
)

// TestConformance runs the suite on DynamoDB Local: every consumer with
// its own SDK clients for the spend, keys and claims.
func TestConformance(t *testing.T) {
	alertstest.Run(t, func(t *testing.T) alertstest.Harness {
		names := ddblocal.Tables(t)
		return alertstest.Harness{
			Spend: ddbharness.SpendOn(t, names),
			Claims: func(t *testing.T) alerts.Claims {
				return ddbalerts.New(ddblocal.Client(t), names.Spend, 30*time.Second)
			},
			States: func(t *testing.T) alerts.States {
				return ddbkeys.New(ddblocal.Client(t), names.Keys, ddbkeys.Options{Timeout: 30 * time.Second})
			},
		}
	})
}
