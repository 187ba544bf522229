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

// TestStrict runs the strict-budget suite on DynamoDB Local: holds admitted
// by ddblimits (8 clients, each its own SDK client), settled by ddbspend
// consumers, released by SweepHolds.
func TestStrict(t *testing.T) {
	spendtest.RunStrict(t, func(t *testing.T) (spendtest.Harness, spendtest.Strict) {
		names := ddblocal.Tables(t)
		newStore := func(t *testing.T) *ddbspend.Store {
			client := ddblocal.Client(t)
			return ddbspend.New(client, names.Spend, names.Keys, ddbkeys.New(client, names.Keys, ddbkeys.Options{}),
				ddbspend.Options{CountersTable: names.Counters, Timeout: 30 * time.Second})
		}
		newLimits := func(t *testing.T) *ddblimits.Store {
			return ddblimits.New(ddblocal.Client(t), names.Counters,
				ddblimits.Options{HoldsTable: names.Spend, Timeout: 60 * time.Second})
		}
		st, reader := newStore(t), newLimits(t)
		return spendtest.Harness{
				Store: st,
				Other: func(t *testing.T) spend.Store { return newStore(t) },
				Keys:  ddbkeys.New(ddblocal.Client(t), names.Keys, ddbkeys.Options{}),
			}, spendtest.Strict{
				Limits: func(t *testing.T) limits.Store { return newLimits(t) },
				Sweep:  st.SweepHolds,
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
			}
	})
}
