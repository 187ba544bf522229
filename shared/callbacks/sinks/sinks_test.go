package sinks

import (
	"sort"
	"testing"

	"github.com/sluice-gw/sluice/shared/config"
)

// TestNamesMatchConfig: the config accepts exactly the callback names a
// sink implements (it warns about the others).
func TestNamesMatchConfig(t *testing.T) {
	var reg, cfg []string
	for n := range All() {
		reg = append(reg, n)
	}
	for n := range config.CallbackNames {
		cfg = append(cfg, n)
	}
	sort.Strings(reg)
	sort.Strings(cfg)
	if len(reg) != len(cfg) {
		t.Fatalf("registry %v, config.CallbackNames %v", reg, cfg)
	}
	for i := range reg {
		if reg[i] != cfg[i] {
			t.Fatalf("registry %v, config.CallbackNames %v", reg, cfg)
		}
	}
}
