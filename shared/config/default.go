package config

import (
	_ "embed"
	"fmt"

	"github.com/sluice-gw/sluice/shared/pricing"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML is the embedded default config, for display.
func DefaultYAML() []byte { return defaultYAML }

// Default returns the embedded default config: mock deployments in two chat
// groups (one of them with two deployments) and one embedding group, priced
// (ResolvePrices) with the embedded price table.
func Default() *Config {
	cfg, err := Load(defaultYAML, nil)
	if err != nil {
		panic(fmt.Sprintf("embedded default config: %v", err)) // a build-time bug, caught by tests
	}
	cfg.ResolvePrices(pricing.Default())
	return cfg
}
