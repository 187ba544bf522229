package spendsqs

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Handler handles one batch as the spend function does in Lambda,
// reporting the messages that failed (spend.Consumer.HandleSQS).
type Handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// PollOptions tune Poll. They mirror the Lambda event source mapping.
type PollOptions struct {
	MaxBatch int           // most messages handled together; 0: 100
	Window   time.Duration // how long a batch gathers after its first message; 0: 1s
	Wait     time.Duration // long poll wait of an empty queue; 0: 20s
	// ShortPoll receives without waiting and sleeps Wait between receives
	// that find nothing: for emulators whose long polls are costly (moto
	// keeps a thread per waiting receive, re-scanning the queue on every
	// send). Real SQS wants long polls.
	ShortPoll bool
	// Drain is how long the batch in hand may still take once ctx ends
	// (SIGTERM): to be handled and deleted. Past it the handler's context
	// ends, and the messages not recorded are returned to the queue at
	// once (their visibility timeout set to 0). 0: 20s.
	Drain  time.Duration
	Logger *slog.Logger
	// AfterHandle, if set, runs after the handler and before the deletes;
	// an error stops Poll there without deleting anything (tests: a
	// consumer killed between its transaction and its deletes).
	AfterHandle func(batch events.SQSEvent, resp events.SQSEventResponse) error
}

// ErrStopped is what Poll returns when AfterHandle stopped it.
var ErrStopped = errors.New("spend poller stopped before deleting a batch")

// Poll long-polls the queue at url until ctx ends, handing each batch to
// handle and deleting the messages it did not report failed; a failed
// message comes back after its visibility timeout and, past the queue's
// maxReceiveCount, goes to the dead-letter queue.
//
// When ctx ends, the batch in hand (being handled, or still gathering) is
// finished first: handled and deleted, for up to o.Drain. The messages it
// could not record by then are returned: made visible again at once
// (ChangeMessageVisibility 0), for the next poller, rather than after
// their visibility timeout. A receive cut by ctx may have taken messages
// Poll never saw: those come back after the visibility timeout (SQS keeps
// them; nothing is lost).
func Poll(ctx context.Context, api API, url string, handle Handler, o PollOptions) error {
	if o.MaxBatch <= 0 {
		o.MaxBatch = 100
	}
	if o.Window <= 0 {
		o.Window = time.Second
	}
	if o.Wait <= 0 {
		o.Wait = 20 * time.Second
	}
	if o.Drain <= 0 {
		o.Drain = 20 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	for ctx.Err() == nil {
		batch, err := gather(ctx, api, url, o)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			o.Logger.LogAttrs(ctx, slog.LevelWarn, "receive from the spend queue", slog.String("error", err.Error()))
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		if len(batch.Records) == 0 {
			continue
		}
		if err := finish(ctx, api, url, handle, batch, o); err != nil {
			return err
		}
	}
	return nil
}

// finish handles and deletes a batch, under a context of its own that
// outlives ctx by o.Drain; if ctx has ended by then, it returns the
// messages not recorded to the queue.
func finish(ctx context.Context, api API, url string, handle Handler, batch events.SQSEvent, o PollOptions) error {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { // ctx ended: o.Drain more, at most
		t := time.NewTimer(o.Drain)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-hctx.Done():
		}
	})
	defer stop()
	failed, err := handleAndDelete(hctx, api, url, handle, batch, o)
	if err == nil && ctx.Err() != nil && len(failed) > 0 {
		returnMessages(ctx, api, url, batch, failed, o)
	}
	return err
}

// returnMessages makes the failed messages of batch visible again at once
// (shutdown: the next poller takes them now, not after their visibility
// timeout).
func returnMessages(ctx context.Context, api API, url string, batch events.SQSEvent, failed map[string]bool, o PollOptions) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	inBatches(batch, func(m events.SQSMessage) bool { return failed[m.MessageId] },
		func(id, receipt *string) types.ChangeMessageVisibilityBatchRequestEntry {
			return types.ChangeMessageVisibilityBatchRequestEntry{Id: id, ReceiptHandle: receipt}
		},
		func(chunk []types.ChangeMessageVisibilityBatchRequestEntry) {
			_, err := api.ChangeMessageVisibilityBatch(rctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: chunk})
			if err != nil { // they come back after their visibility timeout instead
				o.Logger.LogAttrs(rctx, slog.LevelWarn, "return spend messages to the queue", slog.String("error", err.Error()))
			}
		})
	o.Logger.LogAttrs(rctx, slog.LevelWarn, "shutdown: spend messages not recorded returned to the queue", slog.Int("messages", len(failed)))
}

// gather receives up to MaxBatch messages: a long poll for the first, then
// more until the window ends, the batch is full or the queue is empty.
func gather(ctx context.Context, api API, url string, o PollOptions) (events.SQSEvent, error) {
	var batch events.SQSEvent
	var deadline time.Time
	for len(batch.Records) < o.MaxBatch {
		wait := o.Wait
		if len(batch.Records) > 0 {
			wait = time.Until(deadline)
			if wait <= 0 {
				break
			}
		}
		if o.ShortPoll {
			wait = 0
		}
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(url),
			MaxNumberOfMessages:         int32(min(10, o.MaxBatch-len(batch.Records))),
			WaitTimeSeconds:             int32(min(20, max(0, (wait+time.Second-1)/time.Second))),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if len(batch.Records) > 0 {
				break // handle what we hold (ctx ended: finish it)
			}
			return batch, err
		}
		if len(out.Messages) == 0 {
			if len(batch.Records) > 0 {
				break
			}
			if ctx.Err() != nil {
				return batch, nil
			}
			if o.ShortPoll {
				select {
				case <-ctx.Done():
					return batch, nil
				case <-time.After(o.Wait):
				}
			}
			continue
		}
		if len(batch.Records) == 0 {
			deadline = time.Now().Add(o.Window)
		}
		for _, m := range out.Messages {
			batch.Records = append(batch.Records, events.SQSMessage{
				MessageId:     aws.ToString(m.MessageId),
				ReceiptHandle: aws.ToString(m.ReceiptHandle),
				Body:          aws.ToString(m.Body),
				Md5OfBody:     aws.ToString(m.MD5OfBody),
				Attributes:    m.Attributes,
				EventSource:   "aws:sqs",
			})
		}
	}
	return batch, nil
}

// handleAndDelete handles batch and deletes the messages recorded; it
// returns the ids of the others.
func handleAndDelete(ctx context.Context, api API, url string, handle Handler, batch events.SQSEvent, o PollOptions) (map[string]bool, error) {
	resp, err := handle(ctx, batch)
	failed := map[string]bool{}
	if err != nil { // the whole batch failed
		o.Logger.LogAttrs(ctx, slog.LevelError, "spend batch failed", slog.String("error", err.Error()))
		for _, m := range batch.Records {
			failed[m.MessageId] = true
		}
	}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	if o.AfterHandle != nil {
		if err := o.AfterHandle(batch, resp); err != nil {
			return nil, errors.Join(ErrStopped, err)
		}
	}
	inBatches(batch, func(m events.SQSMessage) bool { return !failed[m.MessageId] },
		func(id, receipt *string) types.DeleteMessageBatchRequestEntry {
			return types.DeleteMessageBatchRequestEntry{Id: id, ReceiptHandle: receipt}
		},
		func(chunk []types.DeleteMessageBatchRequestEntry) {
			out, err := api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: chunk})
			if err != nil { // they come back and are found recorded: harmless
				o.Logger.LogAttrs(ctx, slog.LevelWarn, "delete spend messages", slog.String("error", err.Error()))
				return
			}
			for _, f := range out.Failed {
				o.Logger.LogAttrs(ctx, slog.LevelWarn, "delete spend message", slog.String("code", aws.ToString(f.Code)), slog.String("message", aws.ToString(f.Message)))
			}
		})
	return failed, nil
}

// inBatches sends an entry for each message of batch that keep keeps, in
// SQS's batches of at most ten, each entry's id its index in its batch.
func inBatches[E any](batch events.SQSEvent, keep func(events.SQSMessage) bool, entry func(id, receipt *string) E, send func([]E)) {
	var chunk []E
	for _, m := range batch.Records {
		if !keep(m) {
			continue
		}
		chunk = append(chunk, entry(aws.String(strconv.Itoa(len(chunk))), aws.String(m.ReceiptHandle)))
		if len(chunk) == 10 {
			send(chunk)
			chunk = nil
		}
	}
	if len(chunk) > 0 {
		send(chunk)
	}
}
