// Package limits enforces per-minute request (RPM) and token (TPM) limits
// across scopes (key, team, user, deployment, model group), shared by every
// gateway instance, and reserves strict budgets' worst-case costs (Hold).
//
// An admission is all or nothing: a request is admitted only if every scope
// it touches has room and every budget of its hold can take it, and a rejected request consumes
// nothing in any scope. The memory store does this under one lock; the
// DynamoDB store (package ddblimits) in one conditional write or one
// TransactWriteItems, so the gateway's hot path costs one round trip.
//
// Windows are fixed UTC minutes. TPM is admitted on an estimate (prompt
// tokens plus the max_tokens cap) and corrected with AdjustTokens once the
// real usage is known; the correction is unconditional, so a window can end
// slightly above its TPM, as in LiteLLM.
//
// Both stores pass the conformance suite in limitstest.
package limits

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// Kind is the kind of a rate-limit scope.
type Kind string

// The scope kinds.
const (
	KindKey        Kind = "key"
	KindTeam       Kind = "team"
	KindUser       Kind = "user"
	KindEndUser    Kind = "end_user"
	KindMember     Kind = "team_member" // a team membership (id: team "#" user), limited only through a linked budget
	KindDeployment Kind = "deployment"
	KindModelGroup Kind = "model_group"
	KindKeyModel   Kind = "key_model"  // a key's limits on one model (id: key hash "#" model)
	KindTeamModel  Kind = "team_model" // a team's limits on one model (id: team id "#" model)
	KindOrg        Kind = "org"        // an organization's limits (id: organization id)
)

// FailMode says what a check does when the store cannot answer (DynamoDB
// throttled, unreachable or past the deadline).
type FailMode int

const (
	// FailDefault takes the check's default: open for rate limits (a
	// strict budget's hold always fails closed).
	FailDefault FailMode = iota
	// FailOpen admits the request, logs a line and counts it.
	FailOpen
	// FailClosed rejects the request with an error wrapping ErrUnavailable.
	FailClosed
)

// Scope is one rate-limited scope a request counts against.
type Scope struct {
	Kind Kind
	ID   string
	RPM  int64 // requests per minute; 0: no request limit
	TPM  int64 // tokens per minute; 0: no token limit
	// Shards splits the window's counter over this many items, each with an
	// even share of the limits, for limits above one item's write ceiling
	// (see ShardsFor). 0 or 1: one item.
	Shards int
	// Parallel bounds the scope's requests in flight (max_parallel_requests,
	// see parallel.go): the admission takes a lease, Release gives it back.
	// 0: no bound (a limit of 0, which admits nothing, is the caller's to
	// refuse without asking the store).
	Parallel int64
	OnError  FailMode // default: FailOpen
}

// counted says the scope has a per-minute counter (RPM or TPM).
func (s Scope) counted() bool { return s.RPM > 0 || s.TPM > 0 }

// Reason says why a request was not admitted.
type Reason string

// The reasons.
const (
	ReasonRPM      Reason = "rpm"             // the scope's requests per minute are used up
	ReasonTPM      Reason = "tpm"             // the scope's tokens per minute are used up
	ReasonParallel Reason = "parallel"        // the scope's requests in flight are at its Parallel bound
	ReasonBudget   Reason = "budget_exceeded" // a hold's budget has no room left
)

// AdmitRequest is one request to admit.
type AdmitRequest struct {
	Now    time.Time // picks the window; required
	Scopes []Scope   // each (Kind, ID) at most once
	Tokens int64     // estimated tokens: prompt tokens plus the max_tokens cap
	// Hold, if set, reserves a worst-case cost on budget counters in the
	// same atomic write (strict budgets, see Hold). Its failure mode is
	// always closed.
	Hold *Hold
	// Lease names the lease the scopes with a Parallel bound take, unique
	// per admission (the gateway's call id and attempt), and LeaseExpires
	// is when a lease never released stops counting (the request's
	// timeout); required when a scope has Parallel.
	Lease        string
	LeaseExpires time.Time
}

// Decision is the answer to an AdmitRequest.
type Decision struct {
	Allowed bool
	Reason  Reason // why not; empty when allowed
	// BlockedScope is the scope that had no room (Reason rpm or tpm).
	BlockedScope Scope
	// BlockedBudget is the budget of the hold that had no room (Reason
	// budget_exceeded with a Hold), and Committed its counter's value.
	BlockedBudget *BudgetCounter
	Committed     int64
	// RetryAfter is when the blocking window ends (rate limits only).
	RetryAfter time.Duration
	// FailedOpen is set when the store could not answer and every check in
	// the request was fail-open, so the request was admitted uncounted.
	FailedOpen bool
	// Admission identifies the counters written, for AdjustTokens.
	Admission Admission
}

// Admission identifies the token counters an admitted request wrote, and
// the leases it took.
type Admission struct {
	Window time.Time // start of the window
	Slots  []Slot    // the counters of scopes with a TPM limit
	Lease  string    // the lease id (AdmitRequest.Lease); "" when Leased is empty
	Leased []Slot    // the scopes whose lease was taken (Shard 0), for Release
}

// Slot is one counter item: a scope's shard in a window.
type Slot struct {
	Kind  Kind
	ID    string
	Shard int
}

// Store admits requests against shared counters.
//
// Implementations are safe for concurrent use by many goroutines and, for
// shared stores, many processes. Every call is bounded by a deadline.
type Store interface {
	// Admit counts one request and req.Tokens tokens in every scope if every
	// scope (and every budget of req.Hold) has room; otherwise it changes
	// nothing and says which scope or budget blocked. Errors wrap ErrInvalid for a bad
	// request or ErrUnavailable when the store could not answer and a check
	// in the request fails closed.
	Admit(ctx context.Context, req AdmitRequest) (Decision, error)

	// AdjustTokens adds delta (negative to give back) to the token counters
	// of an admission, once the real usage is known. It is unconditional.
	AdjustTokens(ctx context.Context, a Admission, delta int64) error

	// Release gives back the leases of an admission (a.Leased) once its
	// request ended. It is idempotent: a lease released already, or
	// expired and reclaimed, is left alone.
	Release(ctx context.Context, a Admission) error
}

// Errors, in the store-error vocabulary (apierr.ErrInvalid,
// apierr.ErrUnavailable).
var (
	ErrInvalid     = apierr.Classed(apierr.ErrInvalid, "invalid admission request")
	ErrUnavailable = apierr.Classed(apierr.ErrUnavailable, "limits store unavailable")
)

// MaxShards bounds Scope.Shards.
const MaxShards = 64

// WriteCeiling is DynamoDB's write throughput for one item (one partition):
// about 1,000 write units per second.
const WriteCeiling = 1000

// RPMPerShard is the RPM one counter item carries with headroom. An admitted
// request costs its counter item 2 write units when the admission is a
// transaction (several scopes, or a hold) and 1 more for the TPM correction:
// 3 units per request, so an item saturates near 333 requests/s, 20,000 RPM.
// Half of that leaves room for bursts and rejected (still billed) attempts.
const RPMPerShard = 10_000

// ShardsFor returns the number of shards a scope with this RPM needs.
func ShardsFor(rpm int64) int {
	if rpm <= RPMPerShard {
		return 1
	}
	return int(min((rpm+RPMPerShard-1)/RPMPerShard, MaxShards))
}

// WindowStart returns the start of the one-minute window holding now.
func WindowStart(now time.Time) time.Time { return now.UTC().Truncate(time.Minute) }

// WindowEnd returns the end of the window holding now.
func WindowEnd(now time.Time) time.Time { return WindowStart(now).Add(time.Minute) }

// ShardCap returns shard i's share of limit split over n shards.
func ShardCap(limit int64, n, i int) int64 {
	if limit <= 0 {
		return 0
	}
	c := limit / int64(n)
	if int64(i) < limit%int64(n) {
		c++
	}
	return c
}

// effectiveShards clamps s.Shards so that every shard has a non-zero share.
func effectiveShards(s Scope) int {
	n := max(s.Shards, 1)
	if s.RPM > 0 {
		n = int(min(int64(n), s.RPM))
	}
	if s.TPM > 0 {
		n = int(min(int64(n), s.TPM))
	}
	return n
}

// Validate checks req; its error wraps ErrInvalid.
func Validate(req AdmitRequest) error {
	if req.Now.IsZero() {
		return fmt.Errorf("%w: Now is zero", ErrInvalid)
	}
	if req.Tokens < 0 {
		return fmt.Errorf("%w: negative token estimate %d", ErrInvalid, req.Tokens)
	}
	seen := map[[2]string]bool{}
	for _, s := range req.Scopes {
		switch {
		case s.Kind == "" || s.ID == "":
			return fmt.Errorf("%w: scope with empty kind or id (%q, %q)", ErrInvalid, s.Kind, s.ID)
		case s.RPM < 0 || s.TPM < 0 || s.Parallel < 0:
			return fmt.Errorf("%w: scope %s/%s has a negative limit", ErrInvalid, s.Kind, s.ID)
		case s.Shards < 0 || s.Shards > MaxShards:
			return fmt.Errorf("%w: scope %s/%s has %d shards, want 0..%d", ErrInvalid, s.Kind, s.ID, s.Shards, MaxShards)
		case seen[[2]string{string(s.Kind), s.ID}]:
			return fmt.Errorf("%w: scope %s/%s given twice", ErrInvalid, s.Kind, s.ID)
		}
		seen[[2]string{string(s.Kind), s.ID}] = true
		if s.Parallel > 0 && (req.Lease == "" || len(req.Lease) > MaxLeaseID || !req.LeaseExpires.After(req.Now)) {
			return fmt.Errorf("%w: scope %s/%s has a parallel bound and the request no lease id (1..%d bytes) or a lease expiry after Now", ErrInvalid, s.Kind, s.ID, MaxLeaseID)
		}
	}
	if req.Hold != nil {
		return req.Hold.Validate()
	}
	return nil
}
