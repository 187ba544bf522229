package stack_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// poller plays Lambda's SQS poller for one event source mapping: it
// gathers a batch as Lambda does (up to BatchSize messages, ten per
// ReceiveMessage, for at most MaximumBatchingWindowInSeconds once the first
// arrived), invokes the function with a real SQSEvent, and then, as
// Lambda does with ReportBatchItemFailures, deletes the messages the
// function did not report as failed. Failed messages stay in the queue; if
// the function fails as a whole, or answers a malformed response, the whole
// batch stays.
//
// One shortcut: a message that stays becomes visible again after the queue's
// VisibilityTimeout (180 s). The poller makes it visible at once
// (ChangeMessageVisibility 0), as if that time had passed; SQS still counts
// its receives, and moves it to the dead-letter queue after maxReceiveCount.
type poller struct {
	s  *stack
	m  *mapping
	fn *function
}

// round is what one invocation did.
type round struct {
	received []string // message ids, in the batch's order
	failed   []string // reported failed, or all when the function failed
	deleted  []string
	fnError  string // the function's error, when it failed as a whole
}

// poll gathers one batch and invokes the function with it. It returns
// false when the queue had nothing to receive.
func (p *poller) poll(t *testing.T) (round, bool) {
	t.Helper()
	var r round
	msgs := p.receiveBatch(t)
	if len(msgs) == 0 {
		return r, false
	}
	ev := events.SQSEvent{}
	byID := map[string]sqstypes.Message{}
	for _, m := range msgs {
		id := aws.ToString(m.MessageId)
		r.received = append(r.received, id)
		byID[id] = m
		ev.Records = append(ev.Records, p.record(m))
	}
	body, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.fn.tryInvoke(body)
	failed := map[string]bool{}
	switch {
	case err != nil:
		r.fnError = err.Error()
	default:
		var resp struct {
			BatchItemFailures []events.SQSBatchItemFailure `json:"batchItemFailures"`
			ErrorMessage      string                       `json:"errorMessage"`
			ErrorType         string                       `json:"errorType"`
		}
		if err := json.Unmarshal(out, &resp); err != nil && string(out) != "null" {
			r.fnError = fmt.Sprintf("response is not an SQSEventResponse: %s", truncate(out))
			break
		}
		if resp.ErrorMessage != "" || resp.ErrorType != "" {
			r.fnError = resp.ErrorType + ": " + resp.ErrorMessage
			break
		}
		if !p.m.reportFailures {
			break
		}
		for _, f := range resp.BatchItemFailures {
			if _, ok := byID[f.ItemIdentifier]; !ok {
				// Lambda treats a failure naming no message of the batch
				// as a failure of the whole batch.
				r.fnError = fmt.Sprintf("batchItemFailures names %q, not a message of the batch", f.ItemIdentifier)
				break
			}
			failed[f.ItemIdentifier] = true
		}
	}
	var del []sqstypes.DeleteMessageBatchRequestEntry
	for i, id := range r.received {
		if r.fnError != "" || failed[id] {
			r.failed = append(r.failed, id)
			continue
		}
		r.deleted = append(r.deleted, id)
		del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: byID[id].ReceiptHandle})
	}
	for len(del) > 0 {
		n := min(10, len(del))
		out, err := p.s.c.sqs.DeleteMessageBatch(ctx(t), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.m.queueURL), Entries: del[:n]})
		if err != nil {
			t.Fatalf("delete processed messages: %v", err)
		}
		if len(out.Failed) > 0 {
			t.Fatalf("delete processed messages: %+v", out.Failed)
		}
		del = del[n:]
	}
	for _, id := range r.failed {
		if _, err := p.s.c.sqs.ChangeMessageVisibility(ctx(t), &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(p.m.queueURL), ReceiptHandle: byID[id].ReceiptHandle, VisibilityTimeout: 0,
		}); err != nil {
			t.Fatalf("make failed message %s visible again: %v", id, err)
		}
	}
	return r, true
}

// receiveBatch receives up to BatchSize messages: as soon as one arrives,
// for at most the batching window.
func (p *poller) receiveBatch(t *testing.T) []sqstypes.Message {
	t.Helper()
	var batch []sqstypes.Message
	var deadline time.Time
	for len(batch) < p.m.batchSize {
		wait := int32(1)
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			wait = int32(min(20, (left+time.Second-1)/time.Second))
		}
		out, err := p.s.c.sqs.ReceiveMessage(ctx(t), &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(p.m.queueURL),
			MaxNumberOfMessages:         int32(min(10, p.m.batchSize-len(batch))),
			WaitTimeSeconds:             wait,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			t.Fatalf("receive from %s: %v", p.m.queueURL, err)
		}
		if len(out.Messages) == 0 && deadline.IsZero() {
			return nil
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(time.Duration(p.m.window) * time.Second)
		}
		batch = append(batch, out.Messages...)
	}
	return batch
}

// record is a received message as Lambda puts it in an SQSEvent.
func (p *poller) record(m sqstypes.Message) events.SQSMessage {
	r := events.SQSMessage{
		MessageId:              aws.ToString(m.MessageId),
		ReceiptHandle:          aws.ToString(m.ReceiptHandle),
		Body:                   aws.ToString(m.Body),
		Md5OfBody:              aws.ToString(m.MD5OfBody),
		Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
		Attributes:             map[string]string{},
		MessageAttributes:      map[string]events.SQSMessageAttribute{},
		EventSourceARN:         p.m.queueARN,
		EventSource:            "aws:sqs",
		AWSRegion:              region,
	}
	for k, v := range m.Attributes {
		r.Attributes[k] = v
	}
	for k, v := range m.MessageAttributes {
		r.MessageAttributes[k] = events.SQSMessageAttribute{
			StringValue:      v.StringValue,
			BinaryValue:      v.BinaryValue,
			StringListValues: v.StringListValues,
			BinaryListValues: v.BinaryListValues,
			DataType:         aws.ToString(v.DataType),
		}
	}
	return r
}

// drain polls until the queue has nothing to receive, and returns every
// round.
func (p *poller) drain(t *testing.T, maxRounds int) []round {
	t.Helper()
	var rounds []round
	for range maxRounds {
		start := time.Now()
		r, ok := p.poll(t)
		if !ok {
			return rounds
		}
		t.Logf("poller: batch of %d in %v, %d deleted, %d failed%s", len(r.received), time.Since(start).Round(time.Millisecond),
			len(r.deleted), len(r.failed), map[bool]string{true: " (function error: " + r.fnError + ")"}[r.fnError != ""])
		rounds = append(rounds, r)
	}
	t.Fatalf("the queue still has messages after %d rounds", maxRounds)
	return nil
}
