package config

import (
	_ "embed"
	"fmt"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML is the embedded default config, for display.
func DefaultYAML() []byte { return defaultYAML }

// Default returns the embedded default config: mock deployments in two chat
// groups (one of them with two deployments) and one embedding group.
func Default() *Config {
	cfg, err := Load(defaultYAML, nil)
	if err != nil {
		panic(fmt.Sprintf("embedded default config: %v", err)) // a build-time bug, caught by tests
	}
	return cfg
}
