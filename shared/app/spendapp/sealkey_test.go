package spendapp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/models"
)

// With no salt or master key in its environment, the consumer opens the
// callback credentials the admin API sealed with the master key the
// config names (general_settings.master_key: os.environ/...), as the
// gateway reads it; a master key in the environment still comes first.
func TestSealKeyFromConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("general_settings:\n  master_key: os.environ/MK\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) (string, bool) { return map[string]string{"MK": "sk-from-config"}[k], k == "MK" }
	s, err := models.NewSealer("sk-from-config")
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := s.Seal("lf-secret")
	if err != nil {
		t.Fatal(err)
	}
	e := appenv.Settings{ConfigPath: path, Getenv: getenv}
	if got, err := sealKey(e, nil)(sealed); err != nil || got != "lf-secret" {
		t.Errorf("config's master key: %q, %v", got, err)
	}
	e.MasterKey = "sk-environment"
	if got, err := sealKey(e, nil)(sealed); err == nil {
		t.Errorf("the environment's master key opened what the config's sealed: %q", got)
	}
}
