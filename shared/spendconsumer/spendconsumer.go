// Package spendconsumer consumes the spend queue: the SQS batches of spend
// events the gateway sends after each request. For now it checks each event
// and logs it; recording spend in DynamoDB comes with the spend work.
//
// It reports partial batch failures (FunctionResponseTypes:
// ReportBatchItemFailures), so one bad message is retried, and then sent to
// the dead-letter queue, without the rest of its batch.
package spendconsumer

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
)

// Event is the part of a spend event the consumer reads now. Fields it does
// not know are kept on the queue message and ignored here.
type Event struct {
	CallID      string  `json:"call_id"`
	Model       string  `json:"model"`
	ModelGroup  string  `json:"model_group"`
	KeyHash     string  `json:"key_hash"`
	Spend       float64 `json:"spend"`
	TotalTokens int64   `json:"total_tokens"`
}

// Consumer handles spend queue batches.
type Consumer struct {
	log *slog.Logger
}

// New returns a Consumer that logs through log (slog.Default() if nil).
func New(log *slog.Logger) *Consumer {
	if log == nil {
		log = slog.Default()
	}
	return &Consumer{log: log}
}

// Handle processes one SQS batch and names the messages that failed, so that
// only they are retried.
func (c *Consumer) Handle(ctx context.Context, batch events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, m := range batch.Records {
		ev, err := Decode([]byte(m.Body))
		if err != nil {
			c.log.LogAttrs(ctx, slog.LevelWarn, "spend event rejected",
				slog.String("message_id", m.MessageId), slog.String("error", err.Error()))
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			continue
		}
		c.log.LogAttrs(ctx, slog.LevelInfo, "spend event",
			slog.String("message_id", m.MessageId),
			slog.String("call_id", ev.CallID),
			slog.String("model", ev.Model),
			slog.String("model_group", ev.ModelGroup),
			slog.Float64("spend", ev.Spend),
			slog.Int64("total_tokens", ev.TotalTokens))
	}
	return resp, nil
}

// Decode parses one message body: a JSON object.
func Decode(body []byte) (Event, error) {
	var ev Event
	if !json.Valid(body) {
		return ev, fmt.Errorf("spend event: body is not valid JSON (%d bytes)", len(body))
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, fmt.Errorf("spend event: %w", err)
	}
	return ev, nil
}
