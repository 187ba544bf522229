// Package ddbharness builds the conformance-suite harnesses of the
// DynamoDB limits and spend stores on DynamoDB Local (a fresh set of tables
// for each test), each store instance with its own SDK client, as another
// gateway instance or consumer would hold. The spend harness admits its
// holds through the same limits store the limits harness tests.
package ddbharness

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/shared/limits/limitstest"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// Limits is the limitstest harness of ddblimits.
func Limits(t *testing.T) limitstest.Harness {
	names := ddblocal.Tables(t)
	newStore := func(t *testing.T) *ddblimits.Store { return newLimits(t, names, 20*time.Second) }
	reader := newStore(t)
	return limitstest.Harness{
		NewStore: func(t *testing.T) limits.Store { return newStore(t) },
		Count: func(t *testing.T, kind limits.Kind, id string, shard int, now time.Time) (int64, int64) {
			t.Helper()
			req, tok, err := reader.Count(context.Background(), kind, id, shard, now)
			if err != nil {
				t.Fatal(err)
			}
			return req, tok
		},
		Committed: committed(reader),
		InFlight: func(t *testing.T, kind limits.Kind, id string, now time.Time) int64 {
			t.Helper()
			n, err := reader.InFlight(context.Background(), kind, id, now)
			if err != nil {
				t.Fatal(err)
			}
			return n
		},
	}
}

// Spend is the spendtest harness of ddbspend, the strict-budget tests
// included: holds admitted by ddblimits, settled by ddbspend consumers,
// released by SweepHolds.
func Spend(t *testing.T) spendtest.Harness { return SpendOn(t, ddblocal.Tables(t)) }

// SpendOn is Spend on the tables names (ddblocal.Tables), for a suite
// that adds stores of its own on them (alertstest).
func SpendOn(t *testing.T, names tables.Names) spendtest.Harness {
	newStore := func(t *testing.T, maxItems int) *ddbspend.Store {
		client := ddblocal.Client(t)
		// The consumer's own reads of the records, bounded like its
		// writes: DynamoDB Local under a loaded CI machine can take
		// seconds, which the default 2 s per call would make a failure.
		ks := ddbkeys.New(client, names.Keys, ddbkeys.Options{Timeout: 30 * time.Second})
		return ddbspend.New(client, names.Spend, names.Keys, ks,
			ddbspend.Options{MaxItems: maxItems, CountersTable: names.Counters, Timeout: 30 * time.Second})
	}
	st := newStore(t, 0)
	return spendtest.Harness{
		Store: st,
		// Another consumer, with smaller transactions.
		Other: func(t *testing.T) spend.Store { return newStore(t, 17) },
		Keys:  ddbkeys.New(ddblocal.Client(t), names.Keys, ddbkeys.Options{}),
		Strict: &spendtest.Strict{
			Limits:    func(t *testing.T) limits.Store { return newLimits(t, names, 60*time.Second) },
			Sweeper:   st,
			Committed: committed(newLimits(t, names, 60*time.Second)),
			OpenHolds: func(t *testing.T) int {
				n, err := st.OpenHolds(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return n
			},
		},
	}
}

// newLimits returns a ddblimits store on names, with its own client.
func newLimits(t *testing.T, names tables.Names, timeout time.Duration) *ddblimits.Store {
	return ddblimits.New(ddblocal.Client(t), names.Counters, ddblimits.Options{HoldsTable: names.Spend, Timeout: timeout})
}

// committed reads a budget counter's committed spend through reader: the
// sum of its shards once it turned hot (limits/hot_budget.go).
func committed(reader *ddblimits.Store) func(t *testing.T, c string) int64 {
	return func(t *testing.T, c string) int64 {
		t.Helper()
		b, err := limits.ParseBudgetCounter(c)
		if err != nil {
			t.Fatal(err)
		}
		v, _, err := reader.BudgetCommitted(context.Background(), b.Kind, b.ID, b.Period)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
