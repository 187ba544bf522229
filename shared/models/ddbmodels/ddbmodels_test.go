package ddbmodels_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/models/ddbmodels"
	"github.com/sluice-gw/sluice/shared/models/modelstest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

func TestConformance(t *testing.T) {
	modelstest.Run(t, func(t *testing.T) models.Store {
		return ddbmodels.New(ddblocal.Client(t), ddblocal.Tables(t).Keys, ddbmodels.Options{})
	})
}
