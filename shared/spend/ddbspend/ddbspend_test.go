package ddbspend_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// TestConformance runs the suite on DynamoDB Local, the strict-budget tests
// included: holds admitted by ddblimits (each client its own SDK client),
// settled by ddbspend consumers, released by SweepHolds.
func TestConformance(t *testing.T) {
	spendtest.Run(t, func(t *testing.T) spendtest.Harness {
		names := ddblocal.Tables(t)
		newStore := func(t *testing.T, maxItems int) *ddbspend.Store {
			client := ddblocal.Client(t)
			ks := ddbkeys.New(client, names.Keys, ddbkeys.Options{})
			return ddbspend.New(client, names.Spend, names.Keys, ks,
				ddbspend.Options{MaxItems: maxItems, CountersTable: names.Counters, Timeout: 30 * time.Second})
		}
		newLimits := func(t *testing.T) *ddblimits.Store {
			return ddblimits.New(ddblocal.Client(t), names.Counters,
				ddblimits.Options{HoldsTable: names.Spend, Timeout: 60 * time.Second})
		}
		st, reader := newStore(t, 0), newLimits(t)
		return spendtest.Harness{
			Store: st,
			// Another consumer, with smaller transactions.
			Other: func(t *testing.T) spend.Store { return newStore(t, 17) },
			Keys:  ddbkeys.New(ddblocal.Client(t), names.Keys, ddbkeys.Options{}),
			Strict: &spendtest.Strict{
				Limits:  func(t *testing.T) limits.Store { return newLimits(t) },
				Sweeper: st,
				Committed: func(t *testing.T, c string) int64 {
					v, _, err := reader.Committed(context.Background(), c)
					if err != nil {
						t.Fatal(err)
					}
					return v
				},
				OpenHolds: func(t *testing.T) int {
					n, err := st.OpenHolds(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					return n
				},
			},
		}
	})
}
