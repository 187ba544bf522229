package alerts

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// State is what a Claim found.
type State int

// Claim outcomes.
const (
	// Claimed: the caller holds the claim (it was absent, or pending with
	// its lease ended) and must send, then Settle.
	Claimed State = iota + 1
	// Sent: the alert was sent; nothing to do.
	Sent
	// Busy: another holder's lease runs; it sends (or releases the claim
	// and its batch comes back).
	Busy
)

// Claims is where the alerts are claimed, once across every consumer.
// Implementations are safe for concurrent use.
type Claims interface {
	// Claim takes claim id for token until now+lease, if it is absent or
	// pending with its lease ended at now; expires is when the claim may
	// be forgotten (after its period). It reports what it found.
	Claim(ctx context.Context, id, token string, now time.Time, lease time.Duration, expires time.Time) (State, error)
	// Settle ends token's claim: sent marks it sent for good; otherwise it
	// is released, and the next Claim takes it at once. ErrLost if token
	// no longer holds it (its lease ended and another took it).
	Settle(ctx context.Context, id, token string, sent bool) error
}

// ErrLost is Settle's error when the claim is no longer the caller's.
var ErrLost = apierr.Classed(apierr.ErrConflict, "alert claim lost")

// errInvalid is a claim call with an empty id or token.
var errInvalid = apierr.Classed(apierr.ErrInvalid, "alert claim needs an id and a token")

// ValidClaim checks a claim call's arguments.
func ValidClaim(id, token string) error {
	if id == "" || token == "" {
		return errInvalid
	}
	return nil
}

// Memory is the Claims of local mode and tests, under one mutex. Expired
// claims are dropped as they are met.
type Memory struct {
	mu sync.Mutex
	m  map[string]memClaim
}

type memClaim struct {
	sent    bool
	token   string
	lease   time.Time
	expires time.Time
}

var _ Claims = (*Memory)(nil)

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{m: map[string]memClaim{}} }

// Claim implements Claims.
func (m *Memory) Claim(_ context.Context, id, token string, now time.Time, lease time.Duration, expires time.Time) (State, error) {
	if err := ValidClaim(id, token); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.m[id]
	if ok && !c.expires.After(now) {
		ok = false
	}
	switch {
	case ok && c.sent:
		return Sent, nil
	case ok && c.lease.After(now):
		return Busy, nil
	}
	if len(m.m) > 100_000 {
		m.prune(now)
	}
	m.m[id] = memClaim{token: token, lease: now.Add(lease), expires: expires}
	return Claimed, nil
}

// Settle implements Claims.
func (m *Memory) Settle(_ context.Context, id, token string, sent bool) error {
	if err := ValidClaim(id, token); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.m[id]
	if !ok || c.sent || c.token != token {
		return ErrLost
	}
	if sent {
		c.sent = true
	} else {
		c.lease = time.Time{}
	}
	m.m[id] = c
	return nil
}

// prune drops expired claims. m.mu is held.
func (m *Memory) prune(now time.Time) {
	for id, c := range m.m {
		if !c.expires.After(now) {
			delete(m.m, id)
		}
	}
}

// IsLost reports whether err is ErrLost.
func IsLost(err error) bool { return errors.Is(err, ErrLost) }
