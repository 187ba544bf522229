package responses_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/responses"
	"github.com/sluice-gw/sluice/shared/responses/responsestest"
)

func TestMemoryConformance(t *testing.T) {
	responsestest.Run(t, func(t *testing.T) func() responses.Store {
		m := responses.NewMemory()
		return func() responses.Store { return m }
	})
}
