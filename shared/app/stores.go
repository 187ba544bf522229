package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/cooldown/ddbcooldown"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/models/ddbmodels"
	"github.com/sluice-gw/sluice/shared/responses"
	"github.com/sluice-gw/sluice/shared/responses/ddbresponses"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
)

// memoryStores sets gw's stores to memory ones (local mode, tests) and
// returns the keys the handler reads. The spend store settles the
// strict-budget holds of the limits store's ledger, exactly once.
func memoryStores(gw *Gateway) gateway.KeyReader {
	km, lm := keys.NewMemory(), limits.NewMemory()
	sm := spend.NewMemory(km)
	sm.SettleHolds(lm.Ledger())
	gw.Keys, gw.Limits, gw.Cooldowns, gw.Spend = km, lm, cooldown.NewMemory(), sm
	gw.sharedCooldowns = gw.Cooldowns
	gw.Responses = responses.NewMemory()
	gw.Models = models.NewMemory()
	return km
}

// dynamoStores sets gw's stores to the tables s names (the default names
// when none), on one DynamoDB client, and returns the keys the handler
// reads: through a cache of s.KeyCacheTTL, as the admin API writes.
func dynamoStores(s Settings, gw *Gateway, log *slog.Logger) gateway.KeyReader {
	names := s.Tables
	if names == (tables.Names{}) {
		names = tables.DefaultNames()
	}
	client := ddb.NewClient(*s.AWS, s.ddbOptions())
	cached := keys.NewCached(ddbkeys.New(client, names.Keys, ddbkeys.Options{Timeout: s.StoreTimeout}), orDefault(s.KeyCacheTTL, time.Second), s.Now)
	gw.Keys = cached
	gw.Limits = ddblimits.New(client, names.Counters, ddblimits.Options{HoldsTable: names.Spend, Logger: log, Timeout: s.StoreTimeout, AdmitTimeout: s.LimitsTimeout,
		OnThrottle: s.Metrics.ThrottledWrite})
	gw.sharedCooldowns = ddbcooldown.New(client, names.Counters, ddbcooldown.Options{Timeout: s.StoreTimeout})
	gw.Cooldowns = cooldown.NewCached(gw.sharedCooldowns,
		cooldown.CachedOptions{TTL: orDefault(s.CooldownCacheTTL, time.Second), Now: s.Now, Logger: log})
	gw.Responses = ddbresponses.New(client, names.Counters, ddbresponses.Options{Timeout: s.StoreTimeout})
	gw.Models = ddbmodels.New(client, names.Keys, ddbmodels.Options{Timeout: s.StoreTimeout})
	gw.Spend = ddbspend.New(client, names.Spend, names.Keys, ddbkeys.New(client, names.Keys, ddbkeys.Options{}),
		ddbspend.Options{Logger: log, Now: s.Now, CountersTable: names.Counters})
	return cached
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// buildSpendQueue chooses where the handler's spend events go: SQS when
// s.SpendQueueURL is set (held until Flush in Lambda), else an in-process
// queue running the consumer's logic against gw.Spend.
func buildSpendQueue(ctx context.Context, s Settings, gw *Gateway, ks keys.Reader, open func(string) (string, error), log *slog.Logger) error {
	consumer := spend.NewConsumer(gw.Spend, log)
	if s.Metrics != nil {
		consumer.OnFallback = s.Metrics.SpendFallbackEvents
	}
	if s.SpendQueueURL == "" {
		if a := localAlerts(s, gw, log); a != nil { // alerts.go
			consumer.Alerts = a
		}
		if s.Sinks != nil { // the logging callbacks, on the queue's goroutine
			d, err := s.Sinks(ctx, gw.Config.Callbacks, ks, open, s.AWS, log)
			if err != nil {
				return err
			}
			consumer.Sinks = d
		}
		gw.SpendQueue = spend.NewQueue(consumer, spend.QueueOptions{})
		return nil
	}
	if s.AWS == nil {
		return fmt.Errorf("%s is set but there is no AWS configuration", tables.SpendQueueEnvVar)
	}
	gw.SpendQueue = spendsqs.NewPublisher(sqs.NewFromConfig(*s.AWS), s.SpendQueueURL, consumer,
		spendsqs.Options{Manual: s.Lambda, Logger: log, OnError: s.sqsErrors()})
	return nil
}

// FlushSpend sends the spend events of the requests served so far (the
// Lambda hook after each response).
func (g *Gateway) FlushSpend(ctx context.Context) {
	if g.SpendQueue == nil {
		return
	}
	if err := g.SpendQueue.Flush(ctx); err != nil {
		slog.Default().LogAttrs(ctx, slog.LevelWarn, "spend flush", slog.String("error", err.Error()))
	}
}

// Close sends or records the spend events still queued and stops the
// publisher (local mode shutdown).
func (g *Gateway) Close(ctx context.Context) error {
	if g.stopSweeper != nil {
		g.stopSweeper()
	}
	if g.stopSecrets != nil {
		g.stopSecrets()
	}
	if g.SpendQueue == nil {
		return nil
	}
	return g.SpendQueue.Close(ctx)
}
