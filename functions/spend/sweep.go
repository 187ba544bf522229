package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/spend"
)

// handler is the Lambda handler: an SQS batch is recorded; the scheduled
// event (template.yaml, rate(1 minute)) sweeps the strict-budget holds of
// requests that never sent their spend event.
func handler(c *spend.Consumer, sw limits.HoldSweeper, log *slog.Logger) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var probe struct {
			Records    []json.RawMessage `json:"Records"`
			DetailType string            `json:"detail-type"`
		}
		_ = json.Unmarshal(raw, &probe)
		if probe.Records == nil && probe.DetailType == "Scheduled Event" {
			n, err := limits.Sweep(ctx, sw, time.Now(), log)
			return map[string]int{"released": n}, err
		}
		var batch events.SQSEvent
		if err := json.Unmarshal(raw, &batch); err != nil {
			return nil, err
		}
		return c.HandleSQS(ctx, batch)
	}
}
