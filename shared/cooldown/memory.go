package cooldown

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// ErrInvalid is wrapped by the errors for a malformed Failure.
var ErrInvalid = apierr.Classed(apierr.ErrInvalid, "invalid failure")

// Validate checks f; its error wraps ErrInvalid.
func Validate(f Failure) error {
	switch {
	case f.Deployment == "":
		return fmt.Errorf("%w: empty deployment", ErrInvalid)
	case f.At.IsZero():
		return fmt.Errorf("%w: zero time", ErrInvalid)
	case f.Cooldown <= 0:
		return fmt.Errorf("%w: cooldown %v, want > 0", ErrInvalid, f.Cooldown)
	case !f.Immediate && f.Window < time.Millisecond:
		return fmt.Errorf("%w: window %v, want >= 1ms", ErrInvalid, f.Window)
	case f.Allowed < 0:
		return fmt.Errorf("%w: allowed %d, want >= 0", ErrInvalid, f.Allowed)
	}
	return nil
}

// WindowStart returns the start of f's failure-count window, in Unix
// milliseconds: windows are aligned on multiples of f.Window since the epoch.
func WindowStart(f Failure) int64 {
	ms, w := f.At.UnixMilli(), f.Window.Milliseconds()
	return ms - ((ms%w)+w)%w
}

// Until returns the end of the cooldown a failure at f.At starts.
func Until(f Failure) time.Time { return f.At.Add(f.Cooldown).UTC().Truncate(time.Millisecond) }

// Memory is the in-process Store for local mode and unit tests.
//
// It keeps, per deployment, the end of its cooldown and, per error class,
// the current window and its failure count: a failure from an older window
// than the one counted is not counted (windows only move forward), as in the
// DynamoDB store.
type Memory struct {
	mu   sync.Mutex
	deps map[string]*memDeployment
}

type memDeployment struct {
	until  time.Time
	counts map[string]memCount // by class
}

type memCount struct {
	window int64
	n      int
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty memory store.
func NewMemory() *Memory { return &Memory{deps: map[string]*memDeployment{}} }

// RecordFailure implements Store.
func (m *Memory) RecordFailure(_ context.Context, f Failure) (time.Time, error) {
	if err := Validate(f); err != nil {
		return time.Time{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.deps[f.Deployment]
	if !ok {
		d = &memDeployment{counts: map[string]memCount{}}
		m.deps[f.Deployment] = d
	}
	cool := f.Immediate
	if !f.Immediate {
		w := WindowStart(f)
		c := d.counts[f.Class]
		switch {
		case c.window == w:
			c.n++
		case c.window < w:
			c = memCount{window: w, n: 1}
		}
		d.counts[f.Class] = c
		cool = c.window == w && c.n > f.Allowed
	}
	if u := Until(f); cool && u.After(d.until) {
		d.until = u
	}
	if d.until.After(f.At) {
		return d.until, nil
	}
	return time.Time{}, nil
}

// CoolingDown implements Store.
func (m *Memory) CoolingDown(_ context.Context, ids []string, now time.Time) (map[string]time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out map[string]time.Time // nil while nothing cools: the common case allocates nothing
	for _, id := range ids {
		if d, ok := m.deps[id]; ok && d.until.After(now) {
			if out == nil {
				out = make(map[string]time.Time, len(ids))
			}
			out[id] = d.until
		}
	}
	return out, nil
}
