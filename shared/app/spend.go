package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
)

// buildSpend chooses where spend is recorded (the memory store, or the
// spend and keys tables) and where the handler's events go: SQS when
// s.SpendQueueURL is set (held until Flush in Lambda), else an in-process
// queue running the consumer's logic against the same store.
func buildSpend(s Settings, gw *Gateway, log *slog.Logger) error {
	switch s.Store {
	case "", StoreMemory:
		mem := spend.NewMemory(gw.Keys)
		if lm, ok := gw.Limits.(*limits.Memory); ok {
			mem.SettleHolds(lm.Ledger()) // strict-budget holds, settled exactly once
		}
		gw.Spend = mem
	case StoreDynamoDB:
		names := s.Tables
		if names == (tables.Names{}) {
			names = tables.DefaultNames()
		}
		client := ddb.NewClient(*s.AWS, s.ddbOptions())
		gw.Spend = ddbspend.New(client, names.Spend, names.Keys, ddbkeys.New(client, names.Keys, ddbkeys.Options{}),
			ddbspend.Options{Logger: log, Now: s.Now, CountersTable: names.Counters})
	}
	consumer := spend.NewConsumer(gw.Spend, log)
	if s.Metrics != nil {
		consumer.OnFallback = s.Metrics.SpendFallbackEvents
	}
	if s.SpendQueueURL == "" {
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
	if g.SpendQueue == nil {
		return nil
	}
	return g.SpendQueue.Close(ctx)
}
