package app

import (
	"context"
	"log/slog"
	"os"

	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/sysroots"
)

// FromEnv returns the Build settings of the gateway or the admin API from
// e (appenv.Read), with the AWS configuration resolved (ResolveAWS: the
// master key's SSM read starts here). In Lambda, the CA bundle is set up
// first (sysroots), before the first TLS handshake.
//
// The admin API keeps the defaults the gateway tunes: no metrics, no
// spend queue, caches of 1s, no local bounds (it serves its own
// http.Server), and its spend events, of which it has none, are not held
// for a Lambda hook.
func FromEnv(ctx context.Context, e appenv.Settings, log *slog.Logger) (Settings, error) {
	if e.Lambda {
		sysroots.FromBundle() // the CA bundle, not the bundle and its copies
	}
	s := Settings{
		ConfigPath: e.ConfigPath, Store: e.Store, Getenv: e.Getenv, Logger: log, Tables: e.Tables,
		MasterKey: e.MasterKey, MasterKeyParameter: e.MasterKeyParameter,
		SaltKey: e.SaltKey, SaltKeyParameter: e.SaltKeyParameter,
	}
	if e.Function == appenv.Gateway {
		s.SpendQueueURL, s.Lambda, s.Local = e.SpendQueueURL, e.Lambda, e.Local
		s.KeyCacheTTL, s.CooldownCacheTTL = e.KeyCacheTTL, e.CooldownCacheTTL
		s.LimitsTimeout = e.LimitsTimeout
		s.ResponsesTTL, s.SecretsTTL = e.ResponsesTTL, e.SecretsTTL
		s.ModelsReload = e.ModelsReload
		// EMF lines on stdout in Lambda, GET /metrics locally; METRICS=off.
		s.Metrics = newMetrics(e.Metrics, e.MetricsNamespace, e.Lambda, os.Stdout)
	}
	return s, s.ResolveAWS(ctx)
}
