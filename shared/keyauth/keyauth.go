// Package keyauth authenticates a virtual key: the one check the gateway
// and the admin API share. It reads the key of a secret and its records
// and decides whether they may be used; each caller renders the refusal it
// gets (a *Denied) as it always has.
package keyauth

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// Reader is what authentication reads (keys.Reader, and keys.Cached in
// production, satisfy it).
type Reader interface {
	GetKey(ctx context.Context, hash string) (keys.Key, error)
	GetTeam(ctx context.Context, id string) (keys.Team, error)
	GetUser(ctx context.Context, id string) (keys.User, error)
	GetMember(ctx context.Context, g keys.Kind, id, user string) (keys.Member, error)
	GetOrganization(ctx context.Context, id string) (keys.Organization, error)
}

var _ Reader = keys.Reader(nil)

// Reason is why a key is refused.
type Reason uint8

// Reasons.
const (
	Unknown     Reason = iota + 1 // no key has this secret
	Unavailable                   // the store did not answer
	Blocked                       // the key or its team is blocked
	Expired                       // the key has expired
	TeamGone                      // the key's team no longer exists
	OverBudget                    // a budget of Scope is spent
)

// Denied is a refused key: the reason, and the client's error as both the
// gateway and the admin API answer it.
type Denied struct {
	Reason Reason
	// Scope is the record a refusal is about: "key", "team", "user",
	// "team_member" or "organization" (the gateway counts over-budget
	// refusals by it).
	Scope string
	Err   *apierr.Error
}

func (d *Denied) Error() string { return d.Err.Error() }
func (d *Denied) Unwrap() error { return d.Err }

func deny(r Reason, scope string, err *apierr.Error) *Denied {
	return &Denied{Reason: r, Scope: scope, Err: err}
}

func unavailable(scope, what string, err error) *Denied {
	return deny(Unavailable, scope, &apierr.Error{Kind: apierr.Unavailable, Message: "could not check " + what + "; try again", Cause: err})
}

// Authenticator checks keys against Keys at Now.
type Authenticator struct {
	Keys Reader
	Now  func() time.Time // nil: time.Now
}

func (a *Authenticator) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

// Key reads the key of secret and checks that it may be used at all: it
// exists, is not blocked and has not expired. The admin API's check.
func (a *Authenticator) Key(ctx context.Context, secret string) (keys.Key, error) {
	k, _, err := a.key(ctx, keys.HashSecret(secret))
	return k, err
}

// key is Key by the secret's hash, and the time it checked the key at.
func (a *Authenticator) key(ctx context.Context, hash string) (keys.Key, time.Time, error) {
	k, err := a.Keys.GetKey(ctx, hash)
	switch {
	case errors.Is(err, keys.ErrNotFound):
		return keys.Key{}, time.Time{}, deny(Unknown, "key", apierr.New(apierr.Unauthorized, "%s", apierr.Detail(apierr.MsgInvalidKey, "(invalid API key)")))
	case err != nil:
		return keys.Key{}, time.Time{}, unavailable("key", "the API key", err)
	}
	now := a.now()
	switch {
	case k.Blocked:
		return keys.Key{}, now, deny(Blocked, "key", apierr.New(apierr.Unauthorized, "%s", apierr.MsgKeyBlocked))
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		return keys.Key{}, now, deny(Expired, "key", apierr.New(apierr.Unauthorized, "%s", apierr.Detail(apierr.MsgKeyExpired, "Key Expiry time %s and current time %s", k.ExpiresAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))))
	}
	return k, now, nil
}

// User reads the key's user: nil when the key names none, or a user with
// no record.
func (a *Authenticator) User(ctx context.Context, k keys.Key) (*keys.User, error) {
	if k.UserID == "" {
		return nil, nil
	}
	u, err := a.Keys.GetUser(ctx, k.UserID)
	switch {
	case errors.Is(err, keys.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, unavailable("user", "the API key's user", err)
	}
	return &u, nil
}

// Authenticate is the gateway's check of a request's key: Key, then the
// key's budget, its team (it exists, is not blocked, its budget) and the
// team's organization (the same checks), its user's budget and its
// membership's budget, in that order: each record is read only once the
// ones it hangs from passed, and checked as soon as it is read. The
// records come back by value; the key is the one allocation beyond the
// store's.
func (a *Authenticator) Authenticate(ctx context.Context, secret string) (Records, error) {
	k, now, err := a.key(ctx, keys.HashSecret(secret))
	if err != nil {
		return Records{}, err
	}
	r := Records{Key: &k}
	if err := overBudget(&r, KindKey, now); err != nil {
		return Records{}, err
	}
	if k.TeamID != "" {
		t, err := a.Keys.GetTeam(ctx, k.TeamID)
		switch {
		case errors.Is(err, keys.ErrNotFound):
			return Records{}, deny(TeamGone, "team", apierr.New(apierr.Unauthorized, "the key's team %q no longer exists", k.TeamID))
		case err != nil:
			return Records{}, unavailable("team", "the API key's team", err)
		}
		if t.Blocked {
			return Records{}, deny(Blocked, "team", apierr.New(apierr.Unauthorized, "team %s is blocked", t.ID))
		}
		r.Team = &t
		if err := overBudget(&r, KindTeam, now); err != nil {
			return Records{}, err
		}
		if err := a.org(ctx, &r, now); err != nil {
			return Records{}, err
		}
	}
	if !k.Bound.IsZero() && (r.Team == nil || !k.Bound.Holds(r.Team.ID, r.Team.OrganizationID)) {
		// A key minted for another user acts only within its scope; the
		// admin API never writes one outside it.
		return Records{}, deny(Blocked, "key", apierr.New(apierr.Unauthorized, "this key is bound to a team or organization it is no longer in"))
	}
	if r.User, err = a.User(ctx, k); err != nil {
		return Records{}, err
	}
	if err := overBudget(&r, KindUser, now); err != nil {
		return Records{}, err
	}
	if r.User != nil && r.Team != nil {
		m, err := a.Keys.GetMember(ctx, keys.KindTeam, k.TeamID, k.UserID)
		switch {
		case err == nil:
			r.Member = &m
			if err := overBudget(&r, KindMember, now); err != nil {
				return Records{}, err
			}
		case !errors.Is(err, keys.ErrNotFound):
			return Records{}, unavailable("team_member", "the API key's team membership", err)
		}
	}
	return r, nil
}

// overBudget refuses r's record of kind k (none: nil) when its budget is
// spent at now, named as BudgetError names it: a key by keyName, a
// membership by its user and team.
func overBudget(r *Records, k Kind, now time.Time) error {
	for rec := range r.All {
		if rec.Kind != k {
			continue
		}
		b := rec.Settings.Budget
		if !b.Exceeded(now) { // the common case: no message built
			return nil
		}
		name := []string{rec.id}
		switch k {
		case KindKey:
			name[0] = keyName(*r.Key)
		case KindMember:
			name = []string{rec.user, rec.id}
		}
		return deny(OverBudget, k.Scope(), BudgetError(k.Scope(), b, now, name...))
	}
	return nil
}

// keyName names a key in a budget error as LiteLLM's Key= does, without
// its secret: its alias, else "sk-...abcd", else its hash's start.
func keyName(k keys.Key) string {
	switch {
	case k.Alias != "":
		return k.Alias
	case k.KeyName != "":
		return k.KeyName
	case len(k.Hash) > 12:
		return k.Hash[:12]
	}
	return k.Hash
}

// BudgetError is the client's error when b is spent at now, nil when it
// is not: a 400 of type budget_exceeded in LiteLLM's words for the scope
// ("key", "team", "user", "team_member", "end_user", "organization"; id names the record:
// the team member's user and team), then the budget's period when it has
// one (LiteLLM blocks at spend >= max_budget).
func BudgetError(scope string, b keys.Budget, now time.Time, id ...string) *apierr.Error {
	if !b.Exceeded(now) {
		return nil
	}
	spend, limit := usd(b.Current(now)), usd(*b.MaxBudget)
	name := func(i int) string {
		if i < len(id) {
			return id[i]
		}
		return ""
	}
	var msg string
	switch scope {
	case "user":
		msg = fmt.Sprintf("ExceededBudget: User=%s over budget. Spend=%s, Budget=%s", name(0), spend, limit)
	case "end_user":
		msg = fmt.Sprintf("ExceededBudget: End User=%s over budget. Spend=%s, Budget=%s", name(0), spend, limit)
	case "team":
		msg = fmt.Sprintf("Budget has been exceeded! Team=%s Current cost: %s, Max budget: %s", name(0), spend, limit)
	case "team_member":
		msg = fmt.Sprintf("Budget has been exceeded! Team Member=%s Team=%s Current cost: %s, Max budget: %s", name(0), name(1), spend, limit)
	case "organization":
		msg = fmt.Sprintf("Budget has been exceeded! Organization=%s Current cost: %s, Max budget: %s", name(0), spend, limit)
	default:
		msg = fmt.Sprintf("Budget has been exceeded! Key=%s Current cost: %s, Max budget: %s", name(0), spend, limit)
	}
	if b.Duration != "" {
		msg += fmt.Sprintf(" (budget_duration %s: the period resets at %s)", b.Duration, b.ResetAt(now).Format(time.RFC3339))
	}
	return apierr.New(apierr.BudgetExceeded, "%s", msg)
}

func usd(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
