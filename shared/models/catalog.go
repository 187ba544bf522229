package models

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-gw/sluice/shared/config"
)

// Catalog is the model store as the admin API writes it: the store, the
// sealer of credentials, the config file the stored deployments load
// beside (to check a write as a reload will load it), and the live view.
type Catalog struct {
	Store Store
	// Sealer seals credentials (LITELLM_SALT_KEY, else the master key);
	// nil: none is configured, and writes that carry a secret fail.
	Sealer *Sealer
	Base   []byte        // the config file's text
	Getenv config.Getenv // resolves os.environ/NAME, as for the config
	// View returns the deployments served now: the config's and the
	// stored ones (the live snapshot's config).
	View func(ctx context.Context) *config.Config
	// Reload swaps in a snapshot of the store as it is now (after a write).
	Reload func(ctx context.Context) error
}

// Check loads s beside the config's deployments as a reload would: its
// error (path relative to the deployment), else the warnings about it.
func (c *Catalog) Check(s config.Stored) ([]config.Warning, error) {
	return config.CheckStored(c.Base, c.Getenv, s)
}

// ErrSealer is a write of a credential without a salt key.
var ErrSealer = errors.New("no LITELLM_SALT_KEY and no master key: stored credentials cannot be sealed")

// Open returns the stored deployments of recs, credentials opened; a
// record that does not open is left out, with a warning naming it (and
// never its value).
func Open(s *Sealer, recs []Record) ([]config.Stored, []config.Warning) {
	out := make([]config.Stored, 0, len(recs))
	var warns []config.Warning
	for _, r := range recs {
		params := r.Params
		if s != nil {
			var err error
			if params, err = s.OpenParams(r.Params); err != nil {
				warns = append(warns, config.Warning{Path: config.StoredPath(r.ID), Message: fmt.Sprintf("left out: %v (was LITELLM_SALT_KEY or the master key changed?)", err)})
				continue
			}
		} else if hasSecret(params) {
			warns = append(warns, config.Warning{Path: config.StoredPath(r.ID), Message: "left out: " + ErrSealer.Error()})
			continue
		}
		out = append(out, config.Stored{ID: r.ID, ModelName: r.ModelName, Params: params, Info: r.Info})
	}
	return out, warns
}

func hasSecret(params map[string]any) bool {
	for k, v := range params {
		if s, ok := v.(string); ok && s != "" && Secret(k) {
			return true
		}
	}
	return false
}

// Seal returns params with their secrets sealed (ErrSealer without a
// sealer when there is one to seal).
func (c *Catalog) Seal(params map[string]any) (map[string]any, error) {
	return c.withSealer(params, (*Sealer).SealParams)
}

// OpenParams returns stored params with their secrets opened.
func (c *Catalog) OpenParams(params map[string]any) (map[string]any, error) {
	return c.withSealer(params, (*Sealer).OpenParams)
}

// withSealer returns f(c.Sealer, params); without a sealer, params as they
// are, or ErrSealer when they have a secret.
func (c *Catalog) withSealer(params map[string]any, f func(*Sealer, map[string]any) (map[string]any, error)) (map[string]any, error) {
	if c.Sealer != nil {
		return f(c.Sealer, params)
	}
	if hasSecret(params) {
		return nil, ErrSealer
	}
	return params, nil
}

// LoadConfig loads the config file base with the stored records recs
// (opened with s) after its deployments, with a warning for each record
// left out.
func LoadConfig(base []byte, getenv config.Getenv, s *Sealer, recs []Record) (*config.Config, error) {
	stored, warns := Open(s, recs)
	cfg, err := config.LoadStored(base, getenv, stored)
	if err != nil {
		return nil, err
	}
	cfg.Warnings = append(cfg.Warnings, warns...)
	return cfg, nil
}
