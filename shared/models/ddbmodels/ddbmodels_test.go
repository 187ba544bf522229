package ddbmodels_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/models/ddbmodels"
	"github.com/sluice-gw/sluice/shared/models/modelstest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// TestConformance runs the suite on both stores: the memory store of local
// mode and this one on DynamoDB Local.
func TestConformance(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) models.Store{
		"Memory": func(*testing.T) models.Store { return models.NewMemory() },
		"DynamoDB": func(t *testing.T) models.Store {
			return ddbmodels.New(ddblocal.Client(t), ddblocal.Tables(t).Keys, ddbmodels.Options{})
		},
	} {
		t.Run(name, func(t *testing.T) { modelstest.Run(t, open) })
	}
}
