package conformance_test

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/alerts"
	"github.com/sluice-gw/sluice/shared/alerts/alertstest"
	"github.com/sluice-gw/sluice/shared/alerts/ddbalerts"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/cooldown/cooldowntest"
	"github.com/sluice-gw/sluice/shared/cooldown/ddbcooldown"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/limitstest"
	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/models/ddbmodels"
	"github.com/sluice-gw/sluice/shared/models/modelstest"
	"github.com/sluice-gw/sluice/shared/responses"
	"github.com/sluice-gw/sluice/shared/responses/ddbresponses"
	"github.com/sluice-gw/sluice/shared/responses/responsestest"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/ddblocal/ddbharness"
)

// Each suite runs on every store of its port: the memory store of local
// mode and the DynamoDB store on DynamoDB Local, each instance with its own
// SDK client (as another gateway instance or consumer holds). A case of one
// suite gets fresh state on either (conformance.Run).

// loadedEmulator bounds each call: DynamoDB Local under a loaded machine
// takes seconds, where the production default is 2s.
const loadedEmulator = 30 * time.Second

// shared is the newState of a suite of open functions whose instances
// share one store: newStore makes each case's, and every open returns it
// (a memory store, which holds the state of one instance only).
func shared[S any](newStore func() S) func(*testing.T) func() S {
	return func(*testing.T) func() S {
		s := newStore()
		return func() S { return s }
	}
}

// each runs suite on each store's state, in a subtest of the store's name.
func each[S any](t *testing.T, suite func(*testing.T, func(*testing.T) S), stores map[string]func(*testing.T) S) {
	for name, newState := range stores {
		t.Run(name, func(t *testing.T) { suite(t, newState) })
	}
}

// TestCooldown: the memory store, Cached views (TTL 0: every read goes to
// the shared store) of one shared memory store, and ddbcooldown.
func TestCooldown(t *testing.T) {
	each(t, cooldowntest.Run, map[string]func(*testing.T) func() cooldown.Store{
		"Memory": shared(func() cooldown.Store { return cooldown.NewMemory() }),
		"Cached": func(*testing.T) func() cooldown.Store {
			m := cooldown.NewMemory()
			return func() cooldown.Store { return cooldown.NewCached(m, cooldown.CachedOptions{}) }
		},
		"DynamoDB": func(t *testing.T) func() cooldown.Store {
			table := ddblocal.Tables(t).Counters
			return func() cooldown.Store { return ddbcooldown.New(ddblocal.Client(t), table, ddbcooldown.Options{}) }
		},
	})
}

// TestResponses: the memory store and ddbresponses.
func TestResponses(t *testing.T) {
	each(t, responsestest.Run, map[string]func(*testing.T) func() responses.Store{
		"Memory": shared(func() responses.Store { return responses.NewMemory() }),
		"DynamoDB": func(t *testing.T) func() responses.Store {
			table := ddblocal.Tables(t).Counters
			return func() responses.Store {
				return ddbresponses.New(ddblocal.Client(t), table, ddbresponses.Options{Timeout: loadedEmulator})
			}
		},
	})
}

// TestModels: the memory store and ddbmodels.
func TestModels(t *testing.T) {
	each(t, modelstest.Run, map[string]func(*testing.T) models.Store{
		"Memory": func(*testing.T) models.Store { return models.NewMemory() },
		"DynamoDB": func(t *testing.T) models.Store {
			return ddbmodels.New(ddblocal.Client(t), ddblocal.Tables(t).Keys, ddbmodels.Options{})
		},
	})
}

// TestLimits: the memory store and ddblimits.
func TestLimits(t *testing.T) {
	each(t, limitstest.Run, map[string]func(*testing.T) limitstest.Harness{
		"Memory": func(*testing.T) limitstest.Harness {
			m := limits.NewMemory()
			return limitstest.Harness{
				NewStore: func(*testing.T) limits.Store { return m },
				Count: func(_ *testing.T, kind limits.Kind, id string, shard int, now time.Time) (int64, int64) {
					return m.Count(kind, id, shard, now)
				},
				Committed: func(_ *testing.T, c string) int64 { v, _ := m.Ledger().Committed(c); return v },
				InFlight: func(_ *testing.T, kind limits.Kind, id string, now time.Time) int64 {
					return m.InFlight(kind, id, now)
				},
			}
		},
		"DynamoDB": ddbharness.Limits,
	})
}

// TestSpend, the strict-budget tests included: the memory store settling
// the holds of a memory limits store (as local mode wires them), and
// ddbspend, with holds admitted by ddblimits, settled by ddbspend
// consumers, released by SweepHolds.
func TestSpend(t *testing.T) {
	each(t, spendtest.Run, map[string]func(*testing.T) spendtest.Harness{
		"Memory": func(*testing.T) spendtest.Harness {
			ks, lm := keys.NewMemory(), limits.NewMemory()
			st := spend.NewMemory(ks)
			st.SettleHolds(lm.Ledger())
			return spendtest.Harness{
				Store: st, Other: func(*testing.T) spend.Store { return st }, Keys: ks,
				Strict: &spendtest.Strict{
					Limits:    func(*testing.T) limits.Store { return lm },
					Sweeper:   st,
					Committed: func(_ *testing.T, c string) int64 { v, _ := lm.Ledger().Committed(c); return v },
					OpenHolds: func(*testing.T) int { return lm.Ledger().Holds() },
				},
			}
		},
		"DynamoDB": ddbharness.Spend,
	})
}

// TestAlerts: the budget alerts end to end on the memory stores of local
// mode, and on DynamoDB Local, every consumer with its own SDK clients for
// the spend, keys (ddbkeys) and claims (ddbalerts).
func TestAlerts(t *testing.T) {
	each(t, alertstest.Run, map[string]func(*testing.T) alertstest.Harness{
		"Memory": func(*testing.T) alertstest.Harness {
			ks := keys.NewMemory()
			st := spend.NewMemory(ks)
			claims := alerts.NewMemory()
			return alertstest.Harness{
				Spend:  spendtest.Harness{Store: st, Other: func(*testing.T) spend.Store { return st }, Keys: ks},
				Claims: func(*testing.T) alerts.Claims { return claims },
				States: func(*testing.T) alerts.States { return ks },
			}
		},
		"DynamoDB": func(t *testing.T) alertstest.Harness {
			names := ddblocal.Tables(t)
			return alertstest.Harness{
				Spend: ddbharness.SpendOn(t, names),
				Claims: func(t *testing.T) alerts.Claims {
					return ddbalerts.New(ddblocal.Client(t), names.Spend, loadedEmulator)
				},
				States: func(t *testing.T) alerts.States {
					return ddbkeys.New(ddblocal.Client(t), names.Keys, ddbkeys.Options{Timeout: loadedEmulator})
				},
			}
		},
	})
}
