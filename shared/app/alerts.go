package app

import (
	"context"
	"log/slog"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/alerts"
	"github.com/sluice-gw/sluice/shared/alerts/ddbalerts"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// localAlerts returns the budget alerts of the in-process spend consumer
// (local mode) when the config turns alerting on: claims in memory with
// the memory store, in the spend table with DynamoDB (so that local
// gateways and deployed consumers on the same tables send each alert
// once). nil when no destination is configured.
func localAlerts(s Settings, gw *Gateway, log *slog.Logger) spend.Deliverer {
	dests, problems := alerts.DestinationsOf(gw.Config.General.Alerting, s.Getenv)
	for _, p := range problems {
		log.LogAttrs(context.Background(), slog.LevelWarn, "config", slog.String("path", "general_settings.alerting"), slog.String("warning", p))
	}
	if len(dests) == 0 {
		return nil
	}
	o := alerts.Options{Destinations: dests, TTL: gw.Config.General.Alerting.BudgetAlertTTL, Logger: log, Now: s.Now}
	if km, ok := gw.Keys.(*keys.Memory); ok {
		return alerts.New(km, alerts.NewMemory(), o)
	}
	if s.AWS == nil {
		return nil
	}
	names := s.Tables
	if names == (tables.Names{}) {
		names = tables.DefaultNames()
	}
	client := ddb.NewClient(*s.AWS, s.ddbOptions())
	return alerts.New(ddbkeys.New(client, names.Keys, ddbkeys.Options{Timeout: s.StoreTimeout}),
		ddbalerts.New(client, names.Spend, s.StoreTimeout), o)
}
