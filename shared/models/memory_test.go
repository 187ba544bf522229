package models_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/models/modelstest"
)

func TestMemoryConformance(t *testing.T) {
	modelstest.Run(t, func(*testing.T) models.Store { return models.NewMemory() })
}
