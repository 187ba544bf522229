package ddbspend_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/ddblocal/ddbharness"
)

// TestConformance runs the suite on DynamoDB Local, the strict-budget tests
// included: holds admitted by ddblimits (each client its own SDK client),
// settled by ddbspend consumers, released by SweepHolds.
func TestConformance(t *testing.T) { spendtest.Run(t, ddbharness.Spend) }
