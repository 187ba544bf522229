// Package app assembles the gateway from its settings: config, stores,
// router, providers and the HTTP handler. The function mains and the tests
// build the gateway through it, so that local mode, Lambda and tests run the
// same wiring.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
)

// Settings are what the environment and flags decide.
type Settings struct {
	ConfigPath string        // LiteLLM config file; "" for the embedded default
	Store      string        // "memory" (default) or "dynamodb"
	Getenv     config.Getenv // resolves os.environ/NAME in the config
	Logger     *slog.Logger
	// HTTPClient overrides the upstream client (tests).
	HTTPClient *http.Client
}

// Gateway is an assembled gateway.
type Gateway struct {
	Config  *config.Config
	Router  *router.Router
	Handler *gateway.Handler
}

// Build loads the config and wires the gateway.
func Build(ctx context.Context, s Settings) (*Gateway, error) {
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	var cfg *config.Config
	if s.ConfigPath == "" {
		cfg = config.Default()
	} else {
		var err error
		if cfg, err = config.LoadFile(s.ConfigPath, s.Getenv); err != nil {
			return nil, err
		}
	}
	for _, w := range cfg.Warnings {
		log.LogAttrs(ctx, slog.LevelWarn, "config", slog.String("path", w.Path), slog.Int("line", w.Line), slog.String("warning", w.Message))
	}
	switch s.Store {
	case "", "memory":
	default:
		return nil, fmt.Errorf("store %q is not supported (memory, dynamodb)", s.Store)
	}
	rt := router.New(cfg, router.Options{Logger: log})
	client := s.HTTPClient
	if client == nil {
		client = providers.NewHTTPClient()
	}
	h := gateway.New(gateway.Options{
		Config:   cfg,
		Router:   rt,
		Provider: providers.New(client),
		Logger:   log,
	})
	return &Gateway{Config: cfg, Router: rt, Handler: h}, nil
}
