package app

import (
	"fmt"

	"github.com/sluice-gw/sluice/shared/pricing"
)

// PricesEnvVar names a price file in LiteLLM's model_prices_and_context_window.json
// format, used instead of the embedded table.
const PricesEnvVar = "GATEWAY_PRICES"

// prices is the price table the gateway uses: Settings.Prices, else the
// file GATEWAY_PRICES names (read through Settings.Getenv), else the
// embedded table.
func prices(s Settings) (*pricing.Table, error) {
	if s.Prices != nil {
		return s.Prices, nil
	}
	if s.Getenv != nil {
		if path, ok := s.Getenv(PricesEnvVar); ok && path != "" {
			t, err := pricing.LoadFile(path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", PricesEnvVar, err)
			}
			return t, nil
		}
	}
	return pricing.Default(), nil
}
