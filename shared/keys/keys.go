// Package keys keeps the records that carry limits and spend: virtual
// keys, teams, users, team members, end users, organizations and their
// members. Every kind carries one
// Settings value (limits, blocked, metadata, budget).
//
// A key is stored under the SHA-256 of its secret (HashSecret); the raw
// secret is never stored. Spend is changed only by ApplySpend (the spend
// pipeline), atomic additions of integer nano-dollars; updates of a record's
// settings never touch it.
//
// The store is split by consumer: Reader is what the gateway reads per
// request (through Cached, a short per-instance cache), Admin what the
// admin API writes, Spender what the spend consumer records. The memory
// store and the DynamoDB store (package ddbkeys) pass the conformance
// suite of each in keystest.
package keys

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// Reader is what the gateway reads of the records on every request
// (keys.Cached in production, so that the common request reads them from
// this instance's memory).
type Reader interface {
	GetKey(ctx context.Context, hash string) (Key, error)
	GetTeam(ctx context.Context, id string) (Team, error)
	GetUser(ctx context.Context, id string) (User, error)
	// GetMember reads the membership of user in the group g id (g is
	// KindTeam or KindOrg).
	GetMember(ctx context.Context, g Kind, id, user string) (Member, error)
	GetEndUser(ctx context.Context, id string) (EndUser, error)
	GetOrganization(ctx context.Context, id string) (Organization, error)
	// GetBudget reads a reusable budget (Linked applies it to the records
	// that link it).
	GetBudget(ctx context.Context, id string) (BudgetRecord, error)
	// HasEndUsers reports whether any end user record exists, so that the
	// gateway needs no lookup per request while none does.
	HasEndUsers(ctx context.Context) (bool, error)
}

// Spender is what the spend consumer records.
type Spender interface {
	// ApplySpend adds each delta to its record's spend, atomically for the
	// whole slice: lifetime spend, and the spend of the budget period that
	// contains delta.At (a later period starts the period over; an earlier
	// one adds to the lifetime spend only). A delta whose record does not
	// exist is skipped, but an end user's creates it (TracksEndUser); one
	// for a regenerated key's old hash follows it to the key (moves.go). It returns the records whose soft budget this
	// spend crossed for the first time in their period, and marks them.
	// It is not idempotent: the spend pipeline makes it exactly-once.
	ApplySpend(ctx context.Context, deltas []SpendDelta) ([]Ref, error)
}

// Admin is what the admin API reads and writes. Spend changes only
// through Spender; Create and Update methods ignore the spend fields they
// are given, and Update methods replace a record's settings (everything
// but spend, CreatedAt and the membership lists) and return it as stored.
type Admin interface {
	Reader

	// CreateKey stores a new key; ErrExists if its hash is taken,
	// ErrAliasExists if its alias is.
	CreateKey(ctx context.Context, k Key) error
	UpdateKey(ctx context.Context, k Key) (Key, error)
	// GetKeyByAlias returns the key with this key_alias.
	GetKeyByAlias(ctx context.Context, alias string) (Key, error)
	// ArchiveKey deletes a key and keeps an audit copy of it, naming who
	// deleted it; it returns the deleted key.
	ArchiveKey(ctx context.Context, hash, by string) (Key, error)
	// RegenerateKey moves the key at oldHash, with its spend, to k.Hash and
	// k's settings, atomically: the old hash stops existing.
	RegenerateKey(ctx context.Context, oldHash string, k Key) (Key, error)
	// ListKeys returns the keys f selects, in SortKeys order.
	ListKeys(ctx context.Context, f KeyFilter) ([]Key, error)
	// ListDeletedKeys returns the audit copies f selects, oldest deletion first.
	ListDeletedKeys(ctx context.Context, f KeyFilter) ([]DeletedKey, error)

	// Teams, Users, EndUsers, Organizations and Budgets write the
	// records of each kind (Records); an Update keeps what Records says
	// and, per kind: a user's Teams and Organizations (its Role when the
	// update gives none); a team's Members; an organization's CreatedBy,
	// Teams and Members; a budget's CreatedBy. A Create ignores those
	// lists (a user is created as an internal_user when it gives no Role).
	Teams() Records[Team]
	Users() Records[User]
	EndUsers() Records[EndUser]
	Organizations() Records[Organization]
	Budgets() Records[BudgetRecord]

	// AddMember makes m.UserID a member of the group m.Group m.GroupID
	// (a team or an organization) with m's role and budget: the group's
	// Members and the user's Teams (or Organizations) list it, all
	// written at once. The group must exist (ErrNotFound); a user that
	// does not exist is created as an internal_user; ErrExists if it is a
	// member already.
	AddMember(ctx context.Context, m Member) error
	// UpdateMember replaces the role and budget settings of a membership.
	UpdateMember(ctx context.Context, m Member) (Member, error)
	// RemoveMember ends the membership of user in the group g id.
	RemoveMember(ctx context.Context, g Kind, id, user string) error

	// DeleteBudget deletes a budget; ErrNotFound if it does not exist. It
	// does not look for records linking it (BudgetLinks).
	DeleteBudget(ctx context.Context, id string) error
	// BudgetLinks returns the records that link the budget id
	// (Settings.BudgetID), of every kind, by kind then id.
	BudgetLinks(ctx context.Context, id string) ([]Ref, error)

	// SetSpend sets the spend of the record r names to nanos (LiteLLM's
	// spend field of /user/update, which resets spend): its lifetime
	// spend and, with a budget_duration, the spend of the period that
	// contains at; its soft budget crossing is unmarked. ErrNotFound if
	// it does not exist. Spend added concurrently may land before or
	// after it.
	SetSpend(ctx context.Context, r Ref, nanos int64, at time.Time) error

	// Block sets the blocked flag of the key, team or end user r names.
	Block(ctx context.Context, r Ref, blocked bool) error
	// Delete deletes the record r names: a team or a user with its
	// memberships (of teams and organizations), an organization with its
	// memberships (ErrOrgHasTeams while a team names it), an end user, or
	// a key (ArchiveKey by nobody known). Memberships end through
	// RemoveMember.
	Delete(ctx context.Context, r Ref) error
}

// Records writes the records of one kind (Team, User, EndUser,
// Organization or BudgetRecord) for the admin API.
type Records[T any] interface {
	// Create stores a new record; ErrExists if its id is taken.
	Create(ctx context.Context, v T) error
	// Update replaces a record's settings, alias and update stamps
	// (CreatedAt, spend and the lists Admin names are kept) and returns
	// it as stored; ErrNotFound if it does not exist.
	Update(ctx context.Context, v T) (T, error)
	// List returns every record of the kind, by id.
	List(ctx context.Context) ([]T, error)
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
	KindOrg     Kind = "org"     // ID: the organization id
	// KindOrgMember: ID MemberID(org, user).
	KindOrgMember Kind = "orgmember"
)

// Ref names a record.
type Ref struct {
	Kind Kind
	ID   string
}

func (r Ref) String() string { return string(r.Kind) + "#" + r.ID }

// MemberID is the id of a user's membership of a team or an organization
// (MemberRef).
func MemberID(group, user string) string { return group + "#" + user }

// SpendDelta is spend to add to one record.
type SpendDelta struct {
	Ref   Ref
	Nanos int64     // nano-USD, >= 0
	At    time.Time // when it was spent (the request's end): picks the budget period
	// Model is the model group the spend was on, for the record's
	// model_max_budget (keys only); "": none.
	Model string
}

// Errors. Store errors wrap one of these, the store-error vocabulary of
// package apierr (which maps them to the client's errors once), or
// ErrUnavailable from a store that could not answer.
var (
	ErrNotFound    = apierr.ErrNotFound
	ErrExists      = apierr.ErrExists
	ErrInvalid     = apierr.ErrInvalid
	ErrUnavailable = fmt.Errorf("keys store %w", apierr.ErrUnavailable)
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

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "..."
	}
	return s
}
