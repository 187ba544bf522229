package app

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/router"
)

// Stored models (general_settings.store_model_in_db): the gateway serves
// an immutable snapshot (the config with the stored deployments, its
// router and its handler), built by models.Live from the model store and
// swapped whole when the store's version moves. A request reads the
// snapshot once; the router of a new snapshot keeps the counters of the
// deployments that call the same thing (router.Options.Previous), and
// cooldowns live in the cooldown store by deployment id.

// snapshot is what one version of the stored models serves.
type snapshot struct {
	cfg     *config.Config
	router  *router.Router
	handler *gateway.Handler
}

// liveHandler serves each request with the snapshot current when it
// arrives.
type liveHandler struct{ live *models.Live[*snapshot] }

func (l liveHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.live.Current(r.Context()).handler.ServeHTTP(w, r)
}

// pendingModels is the model store being read at start (beside the
// master key's read).
type pendingModels struct {
	done    chan struct{}
	recs    []models.Record
	version int64
	err     error
}

func readModels(ctx context.Context, store models.Store) *pendingModels {
	p := &pendingModels{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.recs, p.version, p.err = store.List(ctx)
	}()
	return p
}

// liveModels builds the first snapshot from the store's records read at
// start (p) and the live view that reloads them, and the catalog the
// admin API writes through. A store that could not be read at start
// leaves the stored models out until the first request's check.
func liveModels(ctx context.Context, s Settings, gw *Gateway, p *pendingModels, prices *pricing.Table,
	newHandler func(*config.Config, *router.Router) *gateway.Handler, log *slog.Logger) (*models.Live[*snapshot], *models.Catalog, error) {
	base, err := configText(s) // every snapshot reloads the stored deployments beside it
	if err != nil {
		return nil, nil, err
	}
	if base == nil {
		base = config.DefaultYAML()
	}
	var sealer *models.Sealer
	if key := cmp.Or(s.SaltKey, gw.Config.General.MasterKey); key != "" {
		sealer, _ = models.NewSealer(key)
	}
	getenv := s.Getenv
	if s.secrets != nil { // os.environ/NAME from the environment, then Secrets Manager (secrets.go)
		getenv = s.secrets.Lookup
	}
	build := func(ctx context.Context, recs []models.Record, prev *snapshot) (*snapshot, error) {
		cfg, err := models.LoadConfig(base, getenv, sealer, recs)
		if err != nil {
			return nil, err
		}
		if s.secrets != nil {
			bindSecretKeys(cfg, s.secrets) // a key from a secret is re-read at the provider's 401/403
		}
		cfg.ResolvePrices(prices)
		if s.MasterKey != "" {
			cfg.General.MasterKey = s.MasterKey
		}
		for _, w := range cfg.Warnings {
			if config.IsStoredPath(w.Path) {
				log.LogAttrs(ctx, slog.LevelWarn, "stored model", slog.String("path", w.Path), slog.String("warning", w.Message))
			}
		}
		var previous *router.Router
		if prev != nil {
			previous = prev.router
		}
		rt := router.New(cfg, router.Options{Logger: log, Cooldowns: gw.Cooldowns, Now: s.Now, OnCooldown: s.Metrics.CooldownStarted, Previous: previous})
		return &snapshot{cfg: cfg, router: rt, handler: newHandler(cfg, rt)}, nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	version := p.version
	if p.err != nil {
		log.LogAttrs(ctx, slog.LevelError, "stored models: not read at start; serving the config's until the first check", slog.String("error", p.err.Error()))
		version = -1 // due at once
	}
	live, err := models.NewLiveFrom(ctx, gw.Models, build, p.recs, version, models.LiveOptions{Interval: s.ModelsReload, Wait: s.ModelsWait, Now: s.Now, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	cat := &models.Catalog{Store: gw.Models, Sealer: sealer, Base: base, Getenv: getenv,
		View: func(ctx context.Context) *config.Config { return live.Current(ctx).cfg }, Reload: live.Reload}
	return live, cat, nil
}
