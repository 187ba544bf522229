package ddbspend_test

import (
	"os"
	"testing"

	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

func TestMain(m *testing.M) { os.Exit(ddblocal.Main(m)) }

func TestConformance(t *testing.T) {
	spendtest.Run(t, func(t *testing.T) spendtest.Harness {
		names := ddblocal.Tables(t)
		newStore := func(t *testing.T, maxItems int) *ddbspend.Store {
			client := ddblocal.Client(t)
			ks := ddbkeys.New(client, names.Keys, ddbkeys.Options{})
			return ddbspend.New(client, names.Spend, names.Keys, ks, ddbspend.Options{MaxItems: maxItems})
		}
		return spendtest.Harness{
			Store: newStore(t, 0),
			// Another consumer, with smaller transactions.
			Other: func(t *testing.T) spend.Store { return newStore(t, 17) },
			Keys:  ddbkeys.New(ddblocal.Client(t), names.Keys, ddbkeys.Options{}),
		}
	})
}
