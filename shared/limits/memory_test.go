package limits_test

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/limitstest"
)

func TestMemory(t *testing.T) {
	limitstest.Run(t, func(t *testing.T) limitstest.Harness {
		m := limits.NewMemory()
		return limitstest.Harness{
			NewStore: func(*testing.T) limits.Store { return m },
			Count: func(_ *testing.T, kind limits.Kind, id string, shard int, now time.Time) (int64, int64) {
				return m.Count(kind, id, shard, now)
			},
			Committed: func(_ *testing.T, c string) int64 { v, _ := m.Ledger().Committed(c); return v },
		}
	})
}
