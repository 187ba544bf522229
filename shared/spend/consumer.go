package spend

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// LostMessage is the message of the log line that carries an event no path
// could record (neither the queue nor the store): its "spend_event"
// attribute is the whole event, which Replay reads back.
const LostMessage = "spend event not recorded"

// LostAttr is the attribute of a LostMessage line that holds the event.
const LostAttr = "spend_event"

// Consumer is the consumer logic every path shares: an SQS batch (the spend
// function, the local poller), the in-process queue, the SQS publisher's
// fallback and a replay. It records valid events through the Store and
// logs what it rejects.
type Consumer struct {
	Store Store
	Log   *slog.Logger
	// OnFallback, if set, hears of events a publisher could not queue:
	// path "store" when Save recorded them directly, "log" when they were
	// only logged (LogLost). The spend-fallback metric.
	OnFallback func(path string, events int)
	// Sinks, if set, receive every valid event of a batch once it is
	// recorded (the logging callbacks, shared/callbacks): from the SQS
	// handler, the in-process queue and a replay, never from Save (a
	// publisher's last resort may run on a request's goroutine). An SQS
	// batch whose delivery fails is redelivered whole (recording it again
	// is a no-op) and reaches the dead-letter queue only after the queue's
	// receive count.
	Sinks Deliverer
	// Alerts, if set, is handed every batch as Sinks is, after it (the
	// budget alerts, shared/alerts): it checks the records the events
	// name, and its error fails an SQS batch the same way.
	Alerts Deliverer

	lost atomic.Int64
}

// Deliverer hands recorded events to the logging callbacks. Deliver
// retries as it sees fit and returns an error only when some sink still
// failed: the events are then delivered again later (an SQS
// redelivery), to every sink, so a sink must take a record it already has
// without duplicating it where its API allows (the request id as its id).
type Deliverer interface {
	Deliver(ctx context.Context, evs []Event) error
}

// deliverMargin is kept of an invocation's time after delivering, to
// answer the batch's failures before Lambda ends it.
const deliverMargin = 2 * time.Second

// deliver hands evs to the sinks and the budget alerts, if any.
func (c *Consumer) deliver(ctx context.Context, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	if d, ok := ctx.Deadline(); ok { // a Lambda invocation's: answer before it ends
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-deliverMargin))
		defer cancel()
	}
	var errs []error
	for _, d := range [...]Deliverer{c.Sinks, c.Alerts} {
		if d != nil {
			errs = append(errs, d.Deliver(ctx, evs))
		}
	}
	return errors.Join(errs...)
}

// NewConsumer returns a Consumer on st logging to log (slog.Default() if nil).
func NewConsumer(st Store, log *slog.Logger) *Consumer {
	if log == nil {
		log = slog.Default()
	}
	return &Consumer{Store: st, Log: log}
}

// Record records evs (valid events) and logs the soft budgets they crossed.
func (c *Consumer) Record(ctx context.Context, evs []Event) (Result, error) {
	if len(evs) == 0 {
		return Result{}, nil
	}
	res, err := c.Store.Record(ctx, evs)
	for _, r := range res.SoftCrossed {
		c.Log.LogAttrs(ctx, slog.LevelWarn, "soft budget crossed", slog.String("record", string(r.Kind)), slog.String("id", r.ID))
	}
	return res, err
}

// HandleSQS handles one SQS batch with partial batch failures: a message
// that does not decode or validate is reported failed (the queue's redrive
// policy moves it to the dead-letter queue) with its reason logged; the
// valid ones are recorded together, and reported failed only if that
// fails (recording again is safe).
func (c *Consumer) HandleSQS(ctx context.Context, batch events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	evs := make([]Event, 0, len(batch.Records))
	ids := make([]string, 0, len(batch.Records))
	for _, m := range batch.Records {
		e, err := Decode([]byte(m.Body))
		if err != nil {
			c.Log.LogAttrs(ctx, slog.LevelError, "spend event rejected",
				slog.String("message_id", m.MessageId),
				slog.String("receive_count", m.Attributes["ApproximateReceiveCount"]),
				slog.String("reason", err.Error()))
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			continue
		}
		evs = append(evs, e)
		ids = append(ids, m.MessageId)
	}
	if len(evs) == 0 {
		return resp, nil
	}
	res, err := c.Record(ctx, evs)
	if err != nil {
		c.Log.LogAttrs(ctx, slog.LevelError, "spend batch not recorded; its messages will be retried",
			slog.Int("events", len(evs)), slog.String("error", err.Error()))
		for _, id := range ids {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return resp, nil
	}
	if err := c.deliver(ctx, evs); err != nil {
		c.Log.LogAttrs(ctx, slog.LevelError, "spend batch recorded, callbacks not delivered; its messages will be retried",
			slog.Int("events", len(evs)), slog.String("error", err.Error()))
		for _, id := range ids {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return resp, nil
	}
	c.Log.LogAttrs(ctx, slog.LevelDebug, "spend batch recorded",
		slog.Int("recorded", res.Recorded), slog.Int("duplicates", res.Duplicates))
	return resp, nil
}

// Save is the last resort of a publisher that could not send evs: it
// records them straight through the store (the idempotent path), trying
// for up to a few seconds within ctx, and failing that logs each whole
// event as one LostMessage line and counts it (Lost).
func (c *Consumer) Save(ctx context.Context, evs []Event, cause error) {
	if len(evs) == 0 {
		return
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		if ctx.Err() != nil {
			break
		}
		if _, err = c.Record(ctx, evs); err == nil {
			c.fallback("store", len(evs))
			c.Log.LogAttrs(ctx, slog.LevelWarn, "spend events recorded directly",
				slog.Int("events", len(evs)), slog.String("cause", errString(cause)))
			return
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	c.LogLost(ctx, evs, fmt.Errorf("%v; then the store: %w", errString(cause), err))
}

// LogLost logs each event as one LostMessage line and counts it.
func (c *Consumer) LogLost(ctx context.Context, evs []Event, cause error) {
	c.fallback("log", len(evs))
	for i := range evs {
		c.lost.Add(1)
		c.Log.LogAttrs(ctx, slog.LevelError, LostMessage,
			slog.Any(LostAttr, json.RawMessage(Encode(&evs[i]))),
			slog.String("error", errString(cause)),
			slog.String("replay", "go run ./functions/spend -replay FILE"))
	}
}

func (c *Consumer) fallback(path string, n int) {
	if c.OnFallback != nil && n > 0 {
		c.OnFallback(path, n)
	}
}

// Lost returns how many events were logged as LostMessage lines.
func (c *Consumer) Lost() int64 { return c.lost.Load() }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// ReadReplay reads the events of a replay file: JSON log lines whose msg is
// LostMessage (their LostAttr is the event), or lines that are events
// themselves. Other lines are skipped; a line that should be an event and
// does not validate is returned in bad with its reason.
func ReadReplay(r io.Reader) (evs []Event, bad []error, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		var probe struct {
			Msg     string          `json:"msg"`
			Event   json.RawMessage `json:"spend_event"`
			Version *int            `json:"v"`
		}
		if json.Unmarshal(b, &probe) != nil {
			continue
		}
		body := b
		switch {
		case probe.Msg == LostMessage && len(probe.Event) > 0:
			body = probe.Event
		case probe.Msg == "" && probe.Version != nil:
		default:
			continue
		}
		e, derr := Decode(body)
		if derr != nil {
			bad = append(bad, fmt.Errorf("line %d: %w", line, derr))
			continue
		}
		evs = append(evs, e)
	}
	return evs, bad, sc.Err()
}

// Replay records the events of a replay file in batches of 100 and reports
// how many were recorded now and how many had been already.
func (c *Consumer) Replay(ctx context.Context, r io.Reader) (recorded, duplicates int, err error) {
	evs, bad, err := ReadReplay(r)
	if err != nil {
		return 0, 0, err
	}
	for _, b := range bad {
		c.Log.LogAttrs(ctx, slog.LevelError, "replay: spend event rejected", slog.String("reason", b.Error()))
	}
	for len(evs) > 0 {
		n := min(len(evs), 100)
		res, err := c.Record(ctx, evs[:n])
		if err != nil {
			return recorded, duplicates, err
		}
		recorded += res.Recorded
		duplicates += res.Duplicates
		if err := c.deliver(ctx, evs[:n]); err != nil {
			c.Log.LogAttrs(ctx, slog.LevelError, "replay: callbacks not delivered", slog.Int("events", n), slog.String("error", err.Error()))
		}
		evs = evs[n:]
	}
	if len(bad) > 0 {
		return recorded, duplicates, fmt.Errorf("%d lines rejected: %w", len(bad), errors.Join(bad...))
	}
	return recorded, duplicates, nil
}
