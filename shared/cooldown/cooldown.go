// Package cooldown keeps the passive-health state of deployments: how often
// each one failed in the current window and until when it is cooling down.
//
// The router owns this interface; the memory store serves local mode and unit
// tests, and the DynamoDB store shares the state between Lambda instances. Both
// pass the same conformance suite (cooldowntest).
package cooldown

import (
	"context"
	"time"
)

// Failure is one failed attempt at a deployment, as the router saw it.
type Failure struct {
	Deployment string        // deployment id (model_info.id)
	Class      string        // error class, e.g. "rate_limited", "server_error"
	At         time.Time     // when it failed
	Allowed    int           // failures of this class tolerated in the window; the next one cools the deployment
	Immediate  bool          // cool down at once (a 429 without an allowed-fails policy for it)
	Window     time.Duration // failure-count window (LiteLLM: one minute)
	Cooldown   time.Duration // how long the deployment then stays out of rotation
}

// Store records failures and answers which deployments are cooling down.
//
// Implementations must be safe for concurrent use by many goroutines and, for
// shared stores, many processes: counting and setting the cooldown are atomic.
// Expiry is decided by comparing times on read, never by relying on deletion.
type Store interface {
	// RecordFailure counts f in its (deployment, class, window) bucket. When the
	// count exceeds f.Allowed, or f.Immediate is set, the deployment cools down
	// until f.At+f.Cooldown; an existing later end is kept, never shortened.
	// It returns the end of the deployment's cooldown after this failure, or the
	// zero time when it is not cooling down.
	RecordFailure(ctx context.Context, f Failure) (until time.Time, err error)

	// CoolingDown returns, for those of ids that are cooling down at now, the
	// time their cooldown ends. Deployments that are not cooling down are absent.
	CoolingDown(ctx context.Context, ids []string, now time.Time) (map[string]time.Time, error)
}
