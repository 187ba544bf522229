// Package keys keeps virtual keys and teams: who may call which models,
// with which limits and budget, and what they have spent.
//
// A key is stored under the SHA-256 of its secret (HashSecret); the raw
// secret is never stored. Spend is changed only by ApplySpend (the spend
// pipeline), atomic additions of integer nano-dollars; updates of a record's
// settings never touch it.
//
// The gateway reads records through Cached (a short per-instance cache) and
// checks "not blocked, not expired, spend below budget" from it.
//
// The memory store and the DynamoDB store (package ddbkeys) pass the
// conformance suite in keystest.
package keys

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
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
	Blocked   bool      //
	ExpiresAt time.Time // zero: never
	CreatedAt time.Time // set by CreateKey when zero
	Budget              // max_budget, soft_budget, budget_duration and spend

	// Admin fields (the admin API's; the gateway does not read them).
	KeyName   string          // "sk-...abcd": the secret's prefix and last 4
	Metadata  json.RawMessage // a JSON object, or nil
	Tags      []string        //
	CreatedBy string          // who created it: a user id or "master_key"
	UpdatedAt time.Time       //
	UpdatedBy string          //
}

// Team groups keys under shared models, limits and budget.
type Team struct {
	ID        string
	Alias     string
	Models    []string
	RPMLimit  int64
	TPMLimit  int64
	Blocked   bool
	CreatedAt time.Time
	Budget    // max_budget, soft_budget, budget_duration and spend

	// Admin fields.
	Members   []TeamMember    // changed only by AddMember, UpdateMember and RemoveMember
	Metadata  json.RawMessage // a JSON object, or nil
	UpdatedAt time.Time
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

	GetTeam(ctx context.Context, id string) (Team, error)
	CreateTeam(ctx context.Context, t Team) error
	UpdateTeam(ctx context.Context, t Team) (Team, error)
	DeleteTeam(ctx context.Context, id string) error
	BlockTeam(ctx context.Context, id string, blocked bool) error

	// ApplySpend adds each delta to its record's spend, atomically for the
	// whole slice: lifetime spend, and the spend of the budget period that
	// contains delta.At (a later period starts the period over; an earlier
	// one adds to the lifetime spend only). A delta whose record does not
	// exist is skipped. It returns the records whose soft budget this
	// spend crossed for the first time in their period, and marks them.
	// It is not idempotent: the spend pipeline makes it exactly-once.
	ApplySpend(ctx context.Context, deltas []SpendDelta) ([]Ref, error)

	AdminStore
}

// Kind is the kind of a record that carries spend.
type Kind string

// Record kinds. The DynamoDB partition key of a record is "<kind>#<id>".
const (
	KindKey     Kind = "key"     // ID: the key's hash
	KindTeam    Kind = "team"    // ID: the team id
	KindUser    Kind = "user"    // ID: the user id
	KindMember  Kind = "member"  // ID: MemberID(team, user)
	KindEndUser Kind = "enduser" // ID: the end user id (a request's "user")
)

// Ref names a record.
type Ref struct {
	Kind Kind
	ID   string
}

func (r Ref) String() string { return string(r.Kind) + "#" + r.ID }

// MemberID is the id of a user's membership of a team.
func MemberID(team, user string) string { return team + "#" + user }

// SpendDelta is spend to add to one record.
type SpendDelta struct {
	Ref   Ref
	Nanos int64     // nano-USD, >= 0
	At    time.Time // when it was spent (the request's end): picks the budget period
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
	k.UpdatedAt = ms(k.UpdatedAt)
	return k
}

func (t Team) normalize() Team {
	if !t.CreatedAt.IsZero() {
		t.CreatedAt = t.CreatedAt.UTC().Truncate(time.Millisecond)
	}
	t.UpdatedAt = ms(t.UpdatedAt)
	return t
}

// Validate checks k; its error wraps ErrInvalid.
func (k Key) Validate() error {
	if !ValidHash(k.Hash) {
		// Never echo the value: it may be a raw secret passed by mistake.
		return fmt.Errorf("key hash: %w: want 64 lowercase hex digits (HashSecret), got %d bytes", ErrInvalid, len(k.Hash))
	}
	if err := validMetadata("key "+k.Hash[:8], k.Metadata); err != nil {
		return err
	}
	return validSettings("key "+k.Hash[:8], k.RPMLimit, k.TPMLimit, k.Budget, k.Models)
}

// Validate checks t; its error wraps ErrInvalid.
func (t Team) Validate() error {
	if err := ValidTeamID(t.ID); err != nil {
		return err
	}
	if err := validMetadata("team "+t.ID, t.Metadata); err != nil {
		return err
	}
	return validSettings("team "+t.ID, t.RPMLimit, t.TPMLimit, t.Budget, t.Models)
}

// ValidTeamID checks a team id; its error wraps ErrInvalid.
func ValidTeamID(id string) error {
	if id == "" || len(id) > 256 {
		return fmt.Errorf("team id %q: %w: want 1 to 256 bytes", short(id), ErrInvalid)
	}
	return nil
}

func validSettings(what string, rpm, tpm int64, b Budget, models []string) error {
	switch {
	case rpm < 0 || tpm < 0:
		return fmt.Errorf("%s: %w: negative rpm or tpm limit", what, ErrInvalid)
	case slices.Contains(models, ""):
		return fmt.Errorf("%s: %w: empty model name", what, ErrInvalid)
	}
	return b.validate(what)
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "..."
	}
	return s
}
