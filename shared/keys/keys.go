// Package keys keeps virtual keys and teams: who may call which models,
// with which limits and budget, and what they have spent.
//
// A key is stored under the SHA-256 of its secret (HashSecret); the raw
// secret is never stored. Spend is changed only by AddKeySpend and
// AddTeamSpend, plain atomic additions; updates of a record's settings never
// touch it.
//
// The gateway reads records through Cached (a short per-instance cache) and
// checks "not blocked, not expired, spend below budget" authoritatively in
// the admission itself, as limits guards (Key.Guard, Team.Guard), so the hot
// path needs no separate read.
//
// The memory store and the DynamoDB store (package ddbkeys) pass the
// conformance suite in keystest.
package keys

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sluice-gw/sluice/shared/limits"
)

// Key is a virtual key.
type Key struct {
	Hash      string    // HashSecret of the secret: 64 lowercase hex digits
	Alias     string    // human-readable name
	TeamID    string    // "" when the key belongs to no team
	UserID    string    // "" when the key belongs to no user
	Models    []string  // allowed model groups; empty: every model (LiteLLM)
	RPMLimit  int64     // 0: none
	TPMLimit  int64     // 0: none
	MaxBudget *float64  // USD; nil: unlimited
	Spend     float64   // USD spent; changed only by AddKeySpend
	Blocked   bool      //
	ExpiresAt time.Time // zero: never
	CreatedAt time.Time // set by CreateKey when zero
}

// Team groups keys under shared models, limits and budget.
type Team struct {
	ID        string
	Alias     string
	Models    []string
	RPMLimit  int64
	TPMLimit  int64
	MaxBudget *float64
	Spend     float64 // changed only by AddTeamSpend
	Blocked   bool
	CreatedAt time.Time
}

// Store keeps keys and teams. Implementations are safe for concurrent use.
type Store interface {
	GetKey(ctx context.Context, hash string) (Key, error)
	// CreateKey stores a new key; ErrExists if its hash is taken.
	CreateKey(ctx context.Context, k Key) error
	// UpdateKey replaces the settings of an existing key (everything but
	// Spend and CreatedAt) and returns the stored key.
	UpdateKey(ctx context.Context, k Key) (Key, error)
	DeleteKey(ctx context.Context, hash string) error
	BlockKey(ctx context.Context, hash string, blocked bool) error
	// AddKeySpend atomically adds usd to the key's spend and returns the new total.
	AddKeySpend(ctx context.Context, hash string, usd float64) (float64, error)

	GetTeam(ctx context.Context, id string) (Team, error)
	CreateTeam(ctx context.Context, t Team) error
	UpdateTeam(ctx context.Context, t Team) (Team, error)
	DeleteTeam(ctx context.Context, id string) error
	BlockTeam(ctx context.Context, id string, blocked bool) error
	AddTeamSpend(ctx context.Context, id string, usd float64) (float64, error)
}

// Errors. Store errors wrap one of these, or ErrUnavailable from a store
// that could not answer.
var (
	ErrNotFound    = errors.New("not found")
	ErrExists      = errors.New("already exists")
	ErrInvalid     = errors.New("invalid")
	ErrUnavailable = errors.New("keys store unavailable")
)

// HashSecret returns the stored form of a key's secret: the hex SHA-256 of
// the whole secret (including its "sk-" prefix), as LiteLLM stores it.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// ValidHash reports whether h looks like a HashSecret result, so that a raw
// secret is never stored by mistake.
func ValidHash(h string) bool {
	if len(h) != sha256.Size*2 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// normalize puts times in UTC at millisecond precision, as stores keep them.
func (k Key) normalize() Key {
	if !k.ExpiresAt.IsZero() {
		k.ExpiresAt = k.ExpiresAt.UTC().Truncate(time.Millisecond)
	}
	if !k.CreatedAt.IsZero() {
		k.CreatedAt = k.CreatedAt.UTC().Truncate(time.Millisecond)
	}
	return k
}

func (t Team) normalize() Team {
	if !t.CreatedAt.IsZero() {
		t.CreatedAt = t.CreatedAt.UTC().Truncate(time.Millisecond)
	}
	return t
}

// Guard returns the admission guard for the key.
func (k Key) Guard() limits.Guard { return limits.Guard{Kind: limits.GuardKey, ID: k.Hash} }

// Guard returns the admission guard for the team.
func (t Team) Guard() limits.Guard { return limits.Guard{Kind: limits.GuardTeam, ID: t.ID} }

// GuardState returns the state the key's guard checks.
func (k Key) GuardState() limits.GuardState {
	return limits.GuardState{Found: true, Blocked: k.Blocked, ExpiresAt: k.ExpiresAt, Spend: k.Spend, MaxBudget: k.MaxBudget}
}

// GuardState returns the state the team's guard checks.
func (t Team) GuardState() limits.GuardState {
	return limits.GuardState{Found: true, Blocked: t.Blocked, Spend: t.Spend, MaxBudget: t.MaxBudget}
}

// Validate checks k; its error wraps ErrInvalid.
func (k Key) Validate() error {
	if !ValidHash(k.Hash) {
		// Never echo the value: it may be a raw secret passed by mistake.
		return fmt.Errorf("key hash: %w: want 64 lowercase hex digits (HashSecret), got %d bytes", ErrInvalid, len(k.Hash))
	}
	return validSettings("key "+k.Hash[:8], k.RPMLimit, k.TPMLimit, k.MaxBudget, k.Models)
}

// Validate checks t; its error wraps ErrInvalid.
func (t Team) Validate() error {
	if err := ValidTeamID(t.ID); err != nil {
		return err
	}
	return validSettings("team "+t.ID, t.RPMLimit, t.TPMLimit, t.MaxBudget, t.Models)
}

// ValidTeamID checks a team id; its error wraps ErrInvalid.
func ValidTeamID(id string) error {
	if id == "" || len(id) > 256 {
		return fmt.Errorf("team id %q: %w: want 1 to 256 bytes", short(id), ErrInvalid)
	}
	return nil
}

func validSettings(what string, rpm, tpm int64, budget *float64, models []string) error {
	switch {
	case rpm < 0 || tpm < 0:
		return fmt.Errorf("%s: %w: negative rpm or tpm limit", what, ErrInvalid)
	case budget != nil && (*budget < 0 || math.IsNaN(*budget) || math.IsInf(*budget, 0)):
		return fmt.Errorf("%s: %w: max budget %v", what, ErrInvalid, *budget)
	case slices.Contains(models, ""):
		return fmt.Errorf("%s: %w: empty model name", what, ErrInvalid)
	}
	return nil
}

// ValidAmount checks a spend increment; its error wraps ErrInvalid.
func ValidAmount(usd float64) error {
	if math.IsNaN(usd) || math.IsInf(usd, 0) {
		return fmt.Errorf("spend %v: %w", usd, ErrInvalid)
	}
	return nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "..."
	}
	return s
}
