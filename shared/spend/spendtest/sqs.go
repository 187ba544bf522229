package spendtest

import (
	"github.com/aws/aws-lambda-go/events"

	"github.com/sluice-gw/sluice/shared/spend"
)

// Batch returns evs as an SQS batch.
func Batch(evs []spend.Event) events.SQSEvent {
	var b events.SQSEvent
	for i := range evs {
		b.Records = append(b.Records, events.SQSMessage{MessageId: evs[i].RequestID, Body: string(spend.Encode(&evs[i]))})
	}
	return b
}
