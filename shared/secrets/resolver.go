// Package secrets resolves a config's os.environ/NAME values from the
// process environment first, then from AWS Secrets Manager
// (general_settings.key_management_system: aws_secret_manager, LiteLLM's
// settings): one JSON secret of NAME: value pairs (primary_secret_name)
// and secrets of their own (hosted_keys, each read as the secret called
// NAME).
//
// The secrets are read once at start (Start, concurrently with the rest of
// the build), again when they are older than the TTL (RefreshStale, after a
// response or on a ticker: never on a request's path), and at once when a
// provider rejects a key read from them (Transport: 401 or 403, one re-read
// shared by every request that saw it, then the request is sent again with
// the new key). A value is never logged nor put in an error.
package secrets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
)

// Defaults.
const (
	// DefaultTTL is how old the secrets may get before a re-read: a
	// rotated secret is served within it without a redeploy.
	DefaultTTL = 5 * time.Minute
	// DefaultRejectGap is the least time between two re-reads a provider's
	// 401/403 starts: a key that is wrong in the secret too costs at most
	// one read per gap, whatever the traffic.
	DefaultRejectGap = time.Second
	// DefaultTimeout bounds a read when its context has no deadline.
	DefaultTimeout = 5 * time.Second
)

// Source reads secrets: the SecretString of each id it could read. An
// error names ids and causes, never a value.
type Source interface {
	GetSecrets(ctx context.Context, ids []string) (map[string]string, error)
}

// Options configure a Resolver.
type Options struct {
	// Env is the process environment (os.LookupEnv): it wins over the
	// secrets.
	Env func(string) (string, bool)
	// Source reads the secrets.
	Source Source
	// Primary is a secret holding a JSON object of NAME: value pairs; ""
	// for none.
	Primary string
	// Hosted are names each read as the secret of that name.
	Hosted []string
	// TTL: zero is DefaultTTL. RejectGap: zero is DefaultRejectGap.
	TTL, RejectGap time.Duration
	Logger         *slog.Logger
	Now            func() time.Time // tests
}

// Resolver is a Lookup for config loading and the model store: the
// environment, then the secrets; Refresh re-reads the secrets.
type Resolver struct {
	o     Options
	ids   []string
	ready chan struct{} // closed when the first read is over
	vals  atomic.Pointer[map[string]string]
	reads atomic.Int64

	mu       sync.Mutex
	inflight chan struct{} // the read in progress, nil when none
	err      error         // of the last read
	started  time.Time     // when the last read started
	ended    time.Time     // when it ended
	// rejectRead is when a provider's rejection last started a read.
	rejectRead time.Time
	refs       map[string]*atomic.Pointer[string]
	prev       map[string]string // a bound name's value before the last change
	startOnce  sync.Once
}

// New returns a Resolver; Start begins its first read.
func New(o Options) *Resolver {
	if o.Env == nil {
		o.Env = func(string) (string, bool) { return "", false }
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.RejectGap <= 0 {
		o.RejectGap = DefaultRejectGap
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	r := &Resolver{o: o, ready: make(chan struct{}), refs: map[string]*atomic.Pointer[string]{}, prev: map[string]string{}}
	if o.Primary != "" {
		r.ids = append(r.ids, o.Primary)
	}
	for _, h := range o.Hosted {
		if h != "" && h != o.Primary && !slices.Contains(r.ids, h) {
			r.ids = append(r.ids, h)
		}
	}
	return r
}

// Start begins the first read in the background (once); Lookup and Wait
// wait for it.
func (r *Resolver) Start(ctx context.Context) {
	r.startOnce.Do(func() {
		go func() {
			defer close(r.ready)
			_ = r.Refresh(ctx)
		}()
	})
}

// Wait waits for the first read and returns its error.
func (r *Resolver) Wait(ctx context.Context) error {
	r.Start(ctx)
	select {
	case <-r.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Lookup resolves name: the environment, else the secrets (waiting for the
// first read).
func (r *Resolver) Lookup(name string) (string, bool) {
	if v, ok := r.o.Env(name); ok {
		return v, true
	}
	return r.secret(name)
}

func (r *Resolver) secret(name string) (string, bool) {
	r.Start(context.Background())
	<-r.ready // the read is bounded by its timeout
	if m := r.vals.Load(); m != nil {
		v, ok := (*m)[name]
		return v, ok
	}
	return "", false
}

// FromSecret says whether Lookup(name) comes from the secrets (the
// environment does not set it).
func (r *Resolver) FromSecret(name string) bool {
	if _, ok := r.o.Env(name); ok {
		return false
	}
	_, ok := r.secret(name)
	return ok
}

// Ref returns the value of name, kept current by every read: what a
// deployment's key reads (config.Deployment.BindKey). nil when name does
// not come from the secrets.
func (r *Resolver) Ref(name string) *atomic.Pointer[string] {
	v, ok := r.secret(name)
	if !ok || !r.FromSecret(name) {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.refs[name]
	if p == nil {
		p = new(atomic.Pointer[string])
		p.Store(&v)
		r.refs[name] = p
	}
	return p
}

// Reads counts the reads made (each is one call per secret).
func (r *Resolver) Reads() int64 { return r.reads.Load() }

// Refresh re-reads the secrets now, or waits for the read in progress
// (single flight). A failed re-read keeps the values read before.
func (r *Resolver) Refresh(ctx context.Context) error {
	_, err := r.refresh(ctx, func(time.Time, time.Time) bool { return true })
	return err
}

// RefreshStale re-reads the secrets when the last read started more than
// the TTL ago; for after a response or a ticker, never a request's path.
func (r *Resolver) RefreshStale(ctx context.Context) {
	now := r.o.Now()
	_, _ = r.refresh(ctx, func(started, _ time.Time) bool { return now.Sub(started) >= r.o.TTL })
}

// refresh reads when should (given the last read's start and end) says so
// and no read is in progress; else it waits for the one in progress. read
// says whether this call read.
func (r *Resolver) refresh(ctx context.Context, should func(started, ended time.Time) bool) (read bool, err error) {
	r.mu.Lock()
	if c := r.inflight; c != nil {
		r.mu.Unlock()
		select {
		case <-c:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return false, r.err
	}
	if !r.started.IsZero() && !should(r.started, r.ended) {
		defer r.mu.Unlock()
		return false, r.err
	}
	c := make(chan struct{})
	r.inflight, r.started = c, r.o.Now()
	r.mu.Unlock()

	vals, err := r.read(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight, r.ended = nil, r.o.Now()
	r.err = err
	if err == nil {
		r.apply(vals)
	} else {
		r.o.Logger.LogAttrs(ctx, slog.LevelWarn, "secrets not read; the values read before stay", slog.String("error", err.Error()))
	}
	close(c)
	return true, err
}

// apply publishes vals and updates the bound values (under r.mu).
func (r *Resolver) apply(vals map[string]string) {
	r.vals.Store(&vals)
	for name, p := range r.refs {
		v, ok := vals[name]
		if old := p.Load(); ok && v != "" && *old != v {
			r.prev[name] = *old
			p.Store(&v)
			r.o.Logger.LogAttrs(context.Background(), slog.LevelInfo, "secret rotated", slog.String("name", name))
		}
	}
}

// read makes one read of every secret: the primary's NAME: value pairs,
// then the hosted keys (a hosted key wins over the same name in the
// primary).
func (r *Resolver) read(ctx context.Context) (map[string]string, error) {
	if len(r.ids) == 0 {
		return map[string]string{}, nil
	}
	ctx = context.WithoutCancel(ctx) // joined by other callers: not cut short by the first one's
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	r.reads.Add(1)
	got, err := r.o.Source.GetSecrets(ctx, r.ids)
	if err != nil {
		return nil, err
	}
	vals := map[string]string{}
	if r.o.Primary != "" {
		s, ok := got[r.o.Primary]
		if !ok {
			return nil, fmt.Errorf("secret %s: not read", r.o.Primary)
		}
		if err := pairs(s, vals); err != nil {
			return nil, fmt.Errorf("secret %s: %w", r.o.Primary, err)
		}
	}
	for _, h := range r.o.Hosted {
		v, ok := got[h]
		if !ok {
			return nil, fmt.Errorf("secret %s: not read", h)
		}
		vals[h] = v
	}
	return vals, nil
}

// pairs reads a JSON object of NAME: value pairs into vals (strings as
// they are, numbers and booleans as written). Its error shows no part of s.
func pairs(s string, vals map[string]string) error {
	if !gjson.Valid(s) {
		return errors.New("not JSON: want an object of NAME: value pairs")
	}
	res := gjson.Parse(s)
	if !res.IsObject() {
		return errors.New("not a JSON object: want NAME: value pairs")
	}
	var bad string
	res.ForEach(func(k, v gjson.Result) bool {
		switch v.Type {
		case gjson.String:
			vals[k.Str] = v.Str
		case gjson.Number, gjson.True, gjson.False:
			vals[k.Str] = v.Raw
		default:
			bad = k.Str
			return false
		}
		return true
	})
	if bad != "" {
		return fmt.Errorf("the value of %s is not a string", bad)
	}
	return nil
}
