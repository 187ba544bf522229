// Package spendsqs carries spend events through SQS: the gateway's
// Publisher (SendMessageBatch, up to 10 events a call) and the poller that
// runs the consumer outside Lambda (go run ./functions/spend).
//
// A Publisher never loses an event: an event SQS did not take after the
// SDK's retries is recorded straight through the store
// (spend.Consumer.Save, the consumer's own idempotent path), and if that
// fails too it is logged whole for a replay.
package spendsqs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluice-gw/sluice/shared/spend"
)

// API is the part of the SQS client this package uses.
type API interface {
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// MaxBatch is SQS's limit of messages in one SendMessageBatch.
const MaxBatch = 10

// Options tune a Publisher.
type Options struct {
	// Manual holds events until Flush (Lambda: the gateway flushes after
	// the client has the last byte, before the invocation returns).
	// Otherwise a goroutine sends them in batches of up to 10, each
	// waiting at most Linger for the others.
	Manual bool
	Linger time.Duration // 0: 5ms
	// Buffer bounds the events waiting to be sent; past it Publish sends
	// in the caller's goroutine. 0: 10,000.
	Buffer int
	// Senders is how many SendMessageBatch calls may be in flight. 0: 4.
	Senders int
	// Timeout bounds one SendMessageBatch (the SDK's retries included)
	// when the caller's context has no sooner deadline. 0: 5s.
	Timeout time.Duration
	Logger  *slog.Logger
	// OnError, if set, is called for each SendMessageBatch call that
	// failed, or that SQS answered with failed entries (the store-error
	// metric).
	OnError func()
}

// Publisher is a spend.Publisher on an SQS queue.
type Publisher struct {
	api      API
	url      string
	fallback *spend.Consumer
	o        Options

	// Manual mode.
	mu      sync.Mutex
	pending []spend.Event

	// Background mode.
	ch      chan spend.Event
	nudge   chan struct{}
	batches chan []spend.Event
	inQueue atomic.Int64 // published and not yet sent or saved
	closeMu sync.RWMutex
	closed  bool
	done    chan struct{}
	// ctx ends when Close's deadline passes: the calls in flight are cut
	// and every event not sent is logged whole (spend.Consumer.LogLost).
	ctx   context.Context
	abort context.CancelFunc

	sent, saved atomic.Int64
	calls       atomic.Int64
}

var _ spend.Publisher = (*Publisher)(nil)

// NewPublisher returns a Publisher sending to the queue at url; events SQS
// does not take go to fallback.Save.
func NewPublisher(api API, url string, fallback *spend.Consumer, o Options) *Publisher {
	if o.Linger <= 0 {
		o.Linger = 5 * time.Millisecond
	}
	if o.Buffer <= 0 {
		o.Buffer = 10_000
	}
	if o.Senders <= 0 {
		o.Senders = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	p := &Publisher{api: api, url: url, fallback: fallback, o: o, done: make(chan struct{})}
	p.ctx, p.abort = context.WithCancel(context.Background())
	if o.Manual {
		close(p.done)
		return p
	}
	p.ch = make(chan spend.Event, o.Buffer)
	p.nudge = make(chan struct{}, 1)
	p.batches = make(chan []spend.Event, o.Senders)
	var wg sync.WaitGroup
	for range o.Senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range p.batches {
				p.send(p.ctx, b)
			}
		}()
	}
	go func() {
		p.collect()
		close(p.batches)
		wg.Wait()
		close(p.done)
	}()
	return p
}

// Stats are a Publisher's counts.
type Stats struct {
	Sent  int64 // events SQS took
	Saved int64 // events recorded (or logged) by the fallback instead
	Calls int64 // SendMessageBatch calls
}

// Stats returns the counts so far.
func (p *Publisher) Stats() Stats {
	return Stats{Sent: p.sent.Load(), Saved: p.saved.Load(), Calls: p.calls.Load()}
}

// Publish implements spend.Publisher.
func (p *Publisher) Publish(e spend.Event) {
	if p.o.Manual {
		p.mu.Lock()
		p.pending = append(p.pending, e)
		p.mu.Unlock()
		return
	}
	p.closeMu.RLock()
	if p.closed {
		p.closeMu.RUnlock()
		p.send(p.ctx, []spend.Event{e})
		return
	}
	p.inQueue.Add(1)
	select {
	case p.ch <- e:
		p.closeMu.RUnlock()
	default:
		p.closeMu.RUnlock()
		p.inQueue.Add(-1)
		p.send(p.ctx, []spend.Event{e})
	}
}

// Flush implements spend.Publisher: in Manual mode it sends what is held,
// in batches of 10 (concurrently), and returns when SQS or the fallback has
// every event; otherwise it waits until the background sender has.
func (p *Publisher) Flush(ctx context.Context) error {
	if p.o.Manual {
		p.mu.Lock()
		evs := p.pending
		p.pending = nil
		p.mu.Unlock()
		if len(evs) <= MaxBatch {
			p.send(ctx, evs)
			return nil
		}
		var wg sync.WaitGroup
		for len(evs) > 0 {
			n := min(len(evs), MaxBatch)
			b := evs[:n]
			evs = evs[n:]
			wg.Add(1)
			go func() { defer wg.Done(); p.send(ctx, b) }()
		}
		wg.Wait()
		return nil
	}
	select {
	case p.nudge <- struct{}{}:
	default:
	}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for p.inQueue.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Close implements spend.Publisher: it sends what is waiting and stops.
// If ctx ends first, the calls in flight are cut and every event not yet
// sent (or being recorded by the fallback) is logged whole; Close returns
// once they are. An event whose cut call SQS had in fact taken is then
// both queued and logged: recording it twice is harmless (idempotent).
func (p *Publisher) Close(ctx context.Context) error {
	if p.o.Manual {
		return p.Flush(ctx)
	}
	p.closeMu.Lock()
	if !p.closed {
		p.closed = true
		close(p.ch)
	}
	p.closeMu.Unlock()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
	}
	p.abort()
	<-p.done // with p.ctx ended, every call and fallback returns at once
	return fmt.Errorf("spend events left at the flush deadline were logged as %q: %w", spend.LostMessage, ctx.Err())
}

// collect gathers events into batches of up to 10, the first waiting at
// most Linger.
func (p *Publisher) collect() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var e spend.Event
		var ok bool
		select {
		case e, ok = <-p.ch:
		case <-p.nudge:
			continue
		}
		if !ok {
			return
		}
		b := make([]spend.Event, 1, MaxBatch)
		b[0] = e
		timer.Reset(p.o.Linger)
	fill:
		for len(b) < MaxBatch {
			select {
			case e, ok = <-p.ch:
				if !ok {
					break fill
				}
				b = append(b, e)
			case <-timer.C:
				break fill
			case <-p.nudge:
				break fill
			}
		}
		timer.Stop()
		p.batches <- b
		if !ok {
			return
		}
	}
}

// send sends one batch (at most 10), in as many SendMessageBatch calls as
// SQS's 256 KB bound on a call needs (events carrying content are large),
// retrying entries SQS failed for its own reasons once, and hands what it
// could not send to the fallback.
func (p *Publisher) send(ctx context.Context, evs []spend.Event) {
	if len(evs) == 0 {
		return
	}
	if !p.o.Manual {
		defer p.inQueue.Add(-int64(len(evs)))
	}
	bodies := make([]string, len(evs))
	size := 0
	for i := range evs {
		bodies[i] = string(spend.Encode(&evs[i]))
		size += len(bodies[i])
	}
	if size <= maxCallBytes {
		p.sendPart(ctx, evs, bodies)
		return
	}
	start, size := 0, 0
	for i := range bodies {
		if i > start && size+len(bodies[i]) > maxCallBytes {
			p.sendPart(ctx, evs[start:i], bodies[start:i])
			start, size = i, 0
		}
		size += len(bodies[i])
	}
	p.sendPart(ctx, evs[start:], bodies[start:])
}

// maxCallBytes bounds the message bodies of one SendMessageBatch: SQS
// refuses a call above 256 KB (262,144 bytes) in all.
const maxCallBytes = 250 << 10

// sendPart sends evs (bodies: their encodings) in one call, retrying what
// SQS failed for its own reasons once; the rest goes to the fallback.
func (p *Publisher) sendPart(ctx context.Context, evs []spend.Event, bodies []string) {
	left, err := p.sendOnce(ctx, evs, bodies)
	if len(left) > 0 && err == nil {
		lb := make([]string, len(left))
		for i := range left {
			lb[i] = string(spend.Encode(&left[i]))
		}
		left, err = p.sendOnce(ctx, left, lb)
	}
	if len(left) > 0 {
		if err == nil {
			err = errPartial
		}
		p.saved.Add(int64(len(left)))
		p.o.Logger.LogAttrs(ctx, slog.LevelWarn, "spend events not sent to SQS; recording them directly",
			slog.Int("events", len(left)), slog.String("error", errString(err)))
		fctx, cancel := p.fallbackContext(ctx)
		p.fallback.Save(fctx, left, err) // logs them whole if fctx ends first
		cancel()
	}
}

// fallbackContext bounds the fallback's store calls for a batch sent
// under ctx: 10 seconds, or ctx's deadline if it has one (Manual: the
// invocation's), not its cancellation (a client gone must not cost the
// event); in background mode Close's abort ends it too.
func (p *Publisher) fallbackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(ctx)
	if ctx == p.ctx {
		base = p.ctx
	}
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(base, d)
	}
	return context.WithTimeout(base, 10*time.Second)
}

// sendOnce makes one SendMessageBatch call; it returns the events SQS
// did not take and, if the call failed as a whole, why.
func (p *Publisher) sendOnce(ctx context.Context, evs []spend.Event, bodies []string) ([]spend.Event, error) {
	entries := make([]types.SendMessageBatchRequestEntry, len(evs))
	for i := range evs {
		entries[i] = types.SendMessageBatchRequestEntry{
			Id:          aws.String(strconv.Itoa(i)),
			MessageBody: aws.String(bodies[i]),
		}
	}
	cctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	p.calls.Add(1)
	out, err := p.api.SendMessageBatch(cctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(p.url), Entries: entries})
	if err != nil {
		p.failed()
		return evs, err
	}
	p.sent.Add(int64(len(out.Successful)))
	if len(out.Failed) == 0 {
		return nil, nil
	}
	p.failed()
	var left []spend.Event
	var senderFault error
	for _, f := range out.Failed {
		i, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil || i < 0 || i >= len(evs) {
			continue
		}
		left = append(left, evs[i])
		if f.SenderFault {
			senderFault = fmt.Errorf("sqs refused a spend event: %s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
		}
	}
	if senderFault == nil {
		senderFault = errPartial
	}
	if errors.Is(senderFault, errPartial) {
		return left, nil // SQS's own failure: worth one more try
	}
	return left, senderFault
}

var errPartial = errors.New("sqs failed part of a batch")

func (p *Publisher) failed() {
	if p.o.OnError != nil {
		p.o.OnError()
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
