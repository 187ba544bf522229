package spend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Publisher is where the gateway hands each request's event. Publish never
// waits on the network and never loses an event (a publisher that cannot
// send falls back to Consumer.Save). Flush returns once everything
// published before it is sent (the Lambda hook after each response, and
// shutdown); Close flushes and stops. When Close's ctx ends first, every
// event not yet recorded or sent is logged whole (Consumer.LogLost)
// before Close returns ctx's error: none is dropped without a line.
type Publisher interface {
	Publish(e Event)
	Flush(ctx context.Context) error
	Close(ctx context.Context) error
}

// QueueOptions tune a Queue.
type QueueOptions struct {
	// Size bounds the events waiting; past it Publish records in the
	// caller's goroutine. 0: 2,048 (the buffer is allocated whole, about
	// 0.4 KB an event).
	Size int
	// Batch is the most events recorded together. 0: 100.
	Batch int
	// Linger is how long the first event of a batch waits for others.
	// 0: 5ms.
	Linger time.Duration
}

// Queue is the in-process publisher of local mode (no SPEND_QUEUE_URL): a
// goroutine records the events in batches through the same Consumer the
// spend function runs, against the same store, so that local mode shows
// spend with no AWS at all. Publish copies the event into a channel: no
// encoding, no allocation.
type Queue struct {
	c      *Consumer
	o      QueueOptions
	ch     chan item
	done   chan struct{}
	closed sync.Once
	mu     sync.RWMutex // excludes Publish from Close
	stop   bool
	// ctx ends when Close's deadline passes: the batch being retried and
	// every event after it are then logged, not recorded.
	ctx   context.Context
	abort context.CancelFunc
	// sinks carries recorded batches to the callbacks' goroutine (nil:
	// no Consumer.Sinks); sinksDone closes when it has finished.
	sinks     chan []Event
	sinksDone chan struct{}
}

type item struct {
	ev    Event
	flush chan struct{} // a flush marker, not an event
}

// NewQueue starts a Queue recording through c.
func NewQueue(c *Consumer, o QueueOptions) *Queue {
	if o.Size <= 0 {
		o.Size = 2048
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
	if o.Linger <= 0 {
		o.Linger = 5 * time.Millisecond
	}
	q := &Queue{c: c, o: o, ch: make(chan item, o.Size), done: make(chan struct{})}
	q.ctx, q.abort = context.WithCancel(context.Background())
	if c.Sinks != nil || c.Alerts != nil {
		q.sinks, q.sinksDone = make(chan []Event, sinkBacklog), make(chan struct{})
		go q.runSinks()
	}
	go q.run()
	return q
}

// ErrClosed is the error of a Flush after Close.
var ErrClosed = errors.New("spend publisher closed")

// Publish implements Publisher.
func (q *Queue) Publish(e Event) {
	q.mu.RLock()
	if q.stop {
		q.mu.RUnlock()
		q.c.Save(q.ctx, []Event{e}, ErrClosed) // logged at once if Close gave up
		return
	}
	select {
	case q.ch <- item{ev: e}:
		q.mu.RUnlock()
	default: // full: record it here rather than drop it
		q.mu.RUnlock()
		q.c.Save(q.ctx, []Event{e}, errors.New("in-process spend queue full"))
	}
}

// Flush implements Publisher.
func (q *Queue) Flush(ctx context.Context) error {
	q.mu.RLock()
	if q.stop {
		q.mu.RUnlock()
		return ErrClosed
	}
	done := make(chan struct{})
	select {
	case q.ch <- item{flush: done}:
		q.mu.RUnlock()
	case <-ctx.Done():
		q.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close implements Publisher: it records what is queued and stops. If ctx
// ends first, the batch being recorded (or retried against a store that is
// down) and the events behind it are logged whole instead, and Close
// returns once they are.
func (q *Queue) Close(ctx context.Context) error {
	q.closed.Do(func() {
		q.mu.Lock()
		q.stop = true
		close(q.ch)
		q.mu.Unlock()
	})
	select {
	case <-q.done:
		if q.sinks == nil {
			return nil
		}
		select {
		case <-q.sinksDone:
			return nil
		case <-ctx.Done(): // the sinks' batches in hand are logged as not delivered
			q.abort()
			<-q.sinksDone
			return fmt.Errorf("callbacks left at the flush deadline were logged as not delivered: %w", ctx.Err())
		}
	case <-ctx.Done():
	}
	q.abort()
	<-q.done // logging what is left takes no store call
	if q.sinks != nil {
		<-q.sinksDone
	}
	return fmt.Errorf("spend events left at the flush deadline were logged as %q: %w", LostMessage, ctx.Err())
}

func (q *Queue) run() {
	defer close(q.done)
	if q.sinks != nil {
		defer close(q.sinks)
	}
	batch := make([]Event, 0, q.o.Batch)
	var flushes []chan struct{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	record := func() {
		if len(batch) > 0 {
			q.record(batch)
			batch = batch[:0]
		}
		for _, f := range flushes {
			close(f)
		}
		flushes = flushes[:0]
	}
	for {
		it, ok := <-q.ch
		if !ok {
			record()
			return
		}
		q.add(it, &batch, &flushes)
		timer.Reset(q.o.Linger)
	fill:
		for len(batch) < q.o.Batch && len(flushes) == 0 {
			select {
			case it, ok = <-q.ch:
				if !ok {
					break fill
				}
				q.add(it, &batch, &flushes)
			case <-timer.C:
				break fill
			}
		}
		timer.Stop()
		record()
		if !ok {
			return
		}
	}
}

func (q *Queue) add(it item, batch *[]Event, flushes *[]chan struct{}) {
	if it.flush != nil {
		*flushes = append(*flushes, it.flush)
		return
	}
	*batch = append(*batch, it.ev)
}

// record records a batch, retrying a failing store a few times before the
// events go to Save's last resort.
func (q *Queue) record(batch []Event) {
	ctx, cancel := context.WithTimeout(q.ctx, 30*time.Second)
	defer cancel()
	valid := batch[:0:0]
	for i := range batch {
		if err := batch[i].Validate(); err != nil {
			q.c.LogLost(ctx, batch[i:i+1], err)
			continue
		}
		valid = append(valid, batch[i])
	}
	err := ctx.Err()
	for attempt := 0; attempt < 3 && ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				continue
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		if _, err = q.c.Record(ctx, valid); err == nil {
			q.deliver(valid)
			return
		}
	}
	if q.ctx.Err() != nil {
		err = fmt.Errorf("shutdown: the spend flush deadline passed: %w", errors.Join(err, q.ctx.Err()))
	}
	q.c.LogLost(context.WithoutCancel(ctx), valid, err)
}

// deliver hands a recorded batch to the sinks' goroutine (Consumer.Sinks),
// never blocking: a sink that is slow or down delays neither recording
// nor a request. Locally there is no redelivery: the Deliverer's own
// retries are all; past them, or when sinkBacklog batches already wait,
// the failure is logged with the request ids.
func (q *Queue) deliver(batch []Event) {
	if q.sinks == nil {
		return
	}
	select {
	case q.sinks <- append([]Event(nil), batch...):
	default:
		q.sinkFailed(batch, errors.New("callback backlog full"))
	}
}

// sinkBacklog bounds the recorded batches waiting for the sinks locally.
const sinkBacklog = 64

func (q *Queue) runSinks() {
	defer close(q.sinksDone)
	for batch := range q.sinks {
		ctx, cancel := context.WithTimeout(q.ctx, 2*time.Minute)
		if err := q.c.deliver(ctx, batch); err != nil {
			q.sinkFailed(batch, err)
		}
		cancel()
	}
}

func (q *Queue) sinkFailed(batch []Event, err error) {
	ids := make([]string, len(batch))
	for i := range batch {
		ids[i] = batch[i].RequestID
	}
	q.c.Log.LogAttrs(context.Background(), slog.LevelError, "callbacks not delivered", slog.Any("request_ids", ids), slog.String("error", err.Error()))
}
