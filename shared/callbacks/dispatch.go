package callbacks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/spend"
)

// When a sink is called: LiteLLM's three lists.
type When uint8

// Whens.
const (
	OnSuccess When = 1 << iota // success_callback
	OnFailure                  // failure_callback
	OnBoth    = OnSuccess | OnFailure
)

func (w When) takes(r *Record) bool {
	if r.Success() {
		return w&OnSuccess != 0
	}
	return w&OnFailure != 0
}

// String is LiteLLM's callback_type name.
func (w When) String() string {
	switch w {
	case OnSuccess:
		return "success"
	case OnFailure:
		return "failure"
	}
	return "success_and_failure"
}

// Options configure a Dispatcher.
type Options struct {
	Callbacks config.Callbacks
	Registry  Registry
	// Env is the base of every sink's Env (Getenv, AWS, HTTP, Log); Name
	// and Params are set per sink.
	Env Env
	// Scopes, if set, reads the callbacks of each call's team and key.
	Scopes Scopes
	// Open opens the credentials of a team's or key's callback_vars,
	// sealed at rest (keys.SealCallbackVars), when its sink is built; nil:
	// they are used as stored.
	Open func(sealed string) (string, error)
	// Attempts per sink and batch before Deliver fails (0: 3); the wait
	// between them starts at Backoff (0: 250ms) and doubles.
	Attempts int
	Backoff  time.Duration
}

// Dispatcher sends each consumer batch to the sinks configured. It is the
// spend.Deliverer of the spend consumer.
type Dispatcher struct {
	o      Options
	log    *slog.Logger
	red    Redaction
	global []entry

	mu     sync.Mutex
	scoped map[string]Sink // team and key sinks, by scopeKey
}

type entry struct {
	name string
	when When
	sink Sink
}

// New builds the sinks o.Callbacks names. A name that o.Registry lacks is
// logged and left out (config warns about it too); a sink whose Factory
// fails fails New.
func New(ctx context.Context, o Options) (*Dispatcher, error) {
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.Backoff <= 0 {
		o.Backoff = 250 * time.Millisecond
	}
	d := &Dispatcher{o: o, log: o.Env.Logger(), scoped: map[string]Sink{},
		red: Redaction{NoContent: o.Callbacks.TurnOffMessageLogging, NoKeyInfo: o.Callbacks.RedactUserAPIKeyInfo}}
	whens := map[string]When{}
	c := o.Callbacks
	for _, l := range []struct {
		names []string
		when  When
	}{{c.Success, OnSuccess}, {c.Failure, OnFailure}, {c.Both, OnBoth}} {
		for _, n := range l.names {
			whens[n] |= l.when
		}
	}
	names := make([]string, 0, len(whens))
	for n := range whens {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, ok := o.Registry[n]
		if !ok {
			d.log.LogAttrs(ctx, slog.LevelWarn, "callback not implemented; ignored", slog.String("callback", n))
			continue
		}
		env := o.Env
		env.Name = n
		if n == "s3" || n == "s3_v2" {
			env.Params = c.S3
		}
		s, err := f(ctx, env)
		if err != nil {
			return nil, fmt.Errorf("callback %s: %w", n, err)
		}
		d.global = append(d.global, entry{name: n, when: whens[n], sink: s})
	}
	return d, nil
}

// Active is one callback that is on.
type Active struct {
	Name string
	When When
}

// Active returns the callbacks of the config that are on (not those of
// teams and keys), sorted by name.
func (d *Dispatcher) Active() []Active {
	out := make([]Active, len(d.global))
	for i, e := range d.global {
		out[i] = Active{Name: e.name, When: e.when}
	}
	return out
}

// Enabled reports whether any sink may receive a record: a configured one,
// or team and key callbacks.
func (d *Dispatcher) Enabled() bool { return len(d.global) > 0 || d.o.Scopes != nil }

// Deliver implements spend.Deliverer: it sends each sink the records of
// evs it takes, all sinks at once, retrying each up to Attempts; it
// returns the errors of the sinks that still failed (a Permanent error is
// logged and not returned: the batch would fail again).
func (d *Dispatcher) Deliver(ctx context.Context, evs []spend.Event) error {
	if !d.Enabled() || len(evs) == 0 {
		return nil
	}
	recs := make([]Record, len(evs))
	for i := range evs {
		recs[i] = NewRecord(&evs[i])
		d.red.Redact(&recs[i])
	}
	type job struct {
		name string
		sink Sink
		recs []Record
	}
	var jobs []job
	for _, e := range d.global {
		var sel []Record
		for i := range recs {
			if e.when.takes(&recs[i]) {
				sel = append(sel, recs[i])
			}
		}
		if len(sel) > 0 {
			jobs = append(jobs, job{e.name, e.sink, sel})
		}
	}
	scoped, err := d.scopedJobs(ctx, evs, recs)
	if err != nil {
		return err
	}
	for _, j := range scoped {
		jobs = append(jobs, job{j.name, j.sink, j.recs})
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.send(ctx, j.name, j.sink, j.recs)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// send calls s with recs until it succeeds, fails permanently, or has
// failed Attempts times.
func (d *Dispatcher) send(ctx context.Context, name string, s Sink, recs []Record) error {
	wait := d.o.Backoff
	var err error
	for attempt := 0; attempt < d.o.Attempts; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("callback %s: %w (after %v)", name, ctx.Err(), err)
			case <-t.C:
			}
			wait *= 2
		}
		if err = s.Send(ctx, recs); err == nil {
			return nil
		}
		if IsPermanent(err) {
			d.log.LogAttrs(ctx, slog.LevelError, "callback rejected the records; dropped",
				slog.String("callback", name), slog.Int("records", len(recs)), slog.String("error", err.Error()))
			return nil
		}
		d.log.LogAttrs(ctx, slog.LevelWarn, "callback failed",
			slog.String("callback", name), slog.Int("attempt", attempt+1), slog.String("error", err.Error()))
	}
	return fmt.Errorf("callback %s: %w", name, err)
}
