package ddbkeys_test

import (
	"os"
	"testing"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/keys/keystest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

func TestMain(m *testing.M) { os.Exit(ddblocal.Main(m)) }

func TestConformance(t *testing.T) {
	tables := map[*testing.T]string{}
	keystest.Run(t, func(t *testing.T) keys.Store {
		name, ok := tables[t]
		if !ok {
			name = ddblocal.Tables(t).Keys
			tables[t] = name
		}
		return ddbkeys.New(ddblocal.Client(t), name, ddbkeys.Options{})
	})
}
