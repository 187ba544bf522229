package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
)

// handler is the Lambda handler: an SQS batch is recorded; the scheduled
// event (template.yaml, rate(1 minute)) sweeps the strict-budget holds of
// requests that never sent their spend event.
func handler(c *spend.Consumer, st *ddbspend.Store, log *slog.Logger) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var probe struct {
			Records    []json.RawMessage `json:"Records"`
			DetailType string            `json:"detail-type"`
		}
		_ = json.Unmarshal(raw, &probe)
		if probe.Records == nil && probe.DetailType == "Scheduled Event" {
			n, err := st.SweepHolds(ctx, time.Now())
			log.LogAttrs(ctx, slog.LevelInfo, "strict budget sweep", slog.Int("released", n))
			return map[string]int{"released": n}, err
		}
		var batch events.SQSEvent
		if err := json.Unmarshal(raw, &batch); err != nil {
			return nil, err
		}
		return c.HandleSQS(ctx, batch)
	}
}

// sweepEvery runs the sweep outside Lambda, next to the queue poller.
func sweepEvery(ctx context.Context, st *ddbspend.Store, log *slog.Logger, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := st.SweepHolds(ctx, time.Now()); err != nil {
				log.LogAttrs(ctx, slog.LevelWarn, "strict budget sweep", slog.String("error", err.Error()))
			} else if n > 0 {
				log.LogAttrs(ctx, slog.LevelWarn, "strict budget holds released", slog.Int("released", n))
			}
		}
	}
}
