package keys

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// UserRole is a user's role on the proxy, as LiteLLM names them.
type UserRole string

// User roles.
const (
	RoleProxyAdmin         UserRole = "proxy_admin"          // everything
	RoleProxyAdminViewer   UserRole = "proxy_admin_viewer"   // reads everything, writes nothing
	RoleInternalUser       UserRole = "internal_user"        // manages its own keys
	RoleInternalUserViewer UserRole = "internal_user_viewer" // reads its own keys and spend
)

// Valid reports whether r is one of the four roles.
func (r UserRole) Valid() bool {
	switch r {
	case RoleProxyAdmin, RoleProxyAdminViewer, RoleInternalUser, RoleInternalUserViewer:
		return true
	}
	return false
}

// Team member roles.
const (
	MemberAdmin = "admin" // manages the team's members and keys
	MemberUser  = "user"
)

// TeamMember is one entry of a team's member list.
type TeamMember struct {
	UserID string
	Role   string // MemberAdmin or MemberUser
}

// User is a person (or a service) that owns keys and belongs to teams.
type User struct {
	ID        string
	Email     string
	Alias     string // user_alias
	Role      UserRole
	Models    []string // models the user's keys may use; empty: every model
	RPMLimit  int64
	TPMLimit  int64
	Teams     []string        // ids of the teams it is a member of (kept by AddMember/RemoveMember)
	Metadata  json.RawMessage // a JSON object, or nil
	CreatedAt time.Time
	UpdatedAt time.Time
	Budget
}

// Member is a user's membership of a team: its role there and its own
// budget inside the team.
type Member struct {
	TeamID    string
	UserID    string
	Role      string // MemberAdmin or MemberUser
	CreatedAt time.Time
	Budget
}

// Ref returns the spend record of the membership.
func (m Member) Ref() Ref { return Ref{KindMember, MemberID(m.TeamID, m.UserID)} }

// EndUser is a customer of the proxy's caller: the "user" field of a request.
type EndUser struct {
	ID        string
	Alias     string
	Blocked   bool
	RPMLimit  int64
	TPMLimit  int64
	CreatedAt time.Time
	UpdatedAt time.Time
	Budget
}

// DeletedKey is the audit copy of a deleted key.
type DeletedKey struct {
	Key
	DeletedAt time.Time
	DeletedBy string // who deleted it: a user id, "master_key", or "" when unknown
}

// KeyFilter selects keys in ListKeys and ListDeletedKeys; empty fields
// match everything.
type KeyFilter struct {
	UserID string
	TeamID string
	Alias  string
}

// Match reports whether k passes f.
func (f KeyFilter) Match(k Key) bool {
	return (f.UserID == "" || k.UserID == f.UserID) &&
		(f.TeamID == "" || k.TeamID == f.TeamID) &&
		(f.Alias == "" || k.Alias == f.Alias)
}

// ErrAliasExists is the error of a key whose alias another key has; it
// wraps ErrExists.
var ErrAliasExists = fmt.Errorf("key_alias: %w", ErrExists)

// ValidID checks a user, end user or team id; its error wraps ErrInvalid.
func ValidID(what, id string) error {
	if id == "" || len(id) > 256 {
		return fmt.Errorf("%s %q: %w: want 1 to 256 bytes", what, short(id), ErrInvalid)
	}
	return nil
}

func validMetadata(what string, m json.RawMessage) error {
	if len(m) == 0 {
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal(m, &v); err != nil {
		return fmt.Errorf("%s: %w: metadata is not a JSON object", what, ErrInvalid)
	}
	return nil
}

// Validate checks u; its error wraps ErrInvalid.
func (u User) Validate() error {
	if err := ValidID("user id", u.ID); err != nil {
		return err
	}
	if u.Role != "" && !u.Role.Valid() {
		return fmt.Errorf("user %s: %w: role %q", short(u.ID), ErrInvalid, u.Role)
	}
	if err := validMetadata("user "+short(u.ID), u.Metadata); err != nil {
		return err
	}
	return validSettings("user "+short(u.ID), u.RPMLimit, u.TPMLimit, u.Budget, u.Models)
}

// Validate checks m; its error wraps ErrInvalid.
func (m Member) Validate() error {
	if err := ValidTeamID(m.TeamID); err != nil {
		return err
	}
	if err := ValidID("user id", m.UserID); err != nil {
		return err
	}
	if m.Role != MemberAdmin && m.Role != MemberUser {
		return fmt.Errorf("member %s: %w: role %q: want admin or user", MemberID(m.TeamID, m.UserID), ErrInvalid, m.Role)
	}
	return m.Budget.validate("member " + MemberID(m.TeamID, m.UserID))
}

// Validate checks e; its error wraps ErrInvalid.
func (e EndUser) Validate() error {
	if err := ValidID("end user id", e.ID); err != nil {
		return err
	}
	return validSettings("end user "+short(e.ID), e.RPMLimit, e.TPMLimit, e.Budget, nil)
}

// Role returns the role of user in the team, "" if it is not a member.
func (t Team) Role(user string) string {
	for _, m := range t.Members {
		if m.UserID == user {
			return m.Role
		}
	}
	return ""
}

func (u User) normalize() User {
	u.CreatedAt = ms(u.CreatedAt)
	u.UpdatedAt = ms(u.UpdatedAt)
	return u
}

func (m Member) normalize() Member {
	m.CreatedAt = ms(m.CreatedAt)
	return m
}

func (e EndUser) normalize() EndUser {
	e.CreatedAt = ms(e.CreatedAt)
	e.UpdatedAt = ms(e.UpdatedAt)
	return e
}

func ms(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Millisecond)
}

func cloneBudget(b Budget) Budget {
	if b.MaxBudget != nil {
		v := *b.MaxBudget
		b.MaxBudget = &v
	}
	if b.SoftBudget != nil {
		v := *b.SoftBudget
		b.SoftBudget = &v
	}
	return b
}

func cloneUser(u User) User {
	u.Models = slices.Clone(u.Models)
	u.Teams = slices.Clone(u.Teams)
	u.Metadata = slices.Clone(u.Metadata)
	u.Budget = cloneBudget(u.Budget)
	return u
}

func cloneMember(m Member) Member {
	m.Budget = cloneBudget(m.Budget)
	return m
}

func cloneEndUser(e EndUser) EndUser {
	e.Budget = cloneBudget(e.Budget)
	return e
}

// SortKeys orders keys by creation time, then hash: the order of ListKeys.
func SortKeys(ks []Key) {
	slices.SortFunc(ks, func(a, b Key) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmpString(a.Hash, b.Hash)
	})
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AdminStore is what the admin API needs of a Store beyond the gateway's
// reads: listing, the audit copies of deleted keys, users, team members and
// end users. Spend on these records changes only through ApplySpend; their
// Create and Update methods ignore the spend fields they are given.
type AdminStore interface {
	// GetKeyByAlias returns the key with this key_alias.
	GetKeyByAlias(ctx context.Context, alias string) (Key, error)
	// ArchiveKey deletes a key and keeps an audit copy of it, naming who
	// deleted it; it returns the deleted key. DeleteKey is ArchiveKey by "".
	ArchiveKey(ctx context.Context, hash, by string) (Key, error)
	// RegenerateKey moves the key at oldHash, with its spend, to k.Hash and
	// k's settings, atomically: the old hash stops existing.
	RegenerateKey(ctx context.Context, oldHash string, k Key) (Key, error)
	// ListKeys returns the keys f selects, in SortKeys order.
	ListKeys(ctx context.Context, f KeyFilter) ([]Key, error)
	// ListDeletedKeys returns the audit copies f selects, oldest deletion first.
	ListDeletedKeys(ctx context.Context, f KeyFilter) ([]DeletedKey, error)

	// ListTeams returns every team, by id.
	ListTeams(ctx context.Context) ([]Team, error)

	GetUser(ctx context.Context, id string) (User, error)
	// CreateUser stores a new user (its Teams are ignored); ErrExists if the id is taken.
	CreateUser(ctx context.Context, u User) error
	// UpdateUser replaces the settings of a user (everything but spend,
	// Teams and CreatedAt) and returns the stored user.
	UpdateUser(ctx context.Context, u User) (User, error)
	// DeleteUser deletes a user and its memberships.
	DeleteUser(ctx context.Context, id string) error
	// ListUsers returns every user, by id.
	ListUsers(ctx context.Context) ([]User, error)

	GetMember(ctx context.Context, team, user string) (Member, error)
	// AddMember makes m.UserID a member of m.TeamID with m's role and
	// budget: the team's Members and the user's Teams list it. The team
	// must exist (ErrNotFound); a user that does not exist is created as
	// an internal_user; ErrExists if it is a member already.
	AddMember(ctx context.Context, m Member) error
	// UpdateMember replaces the role and budget settings of a membership.
	UpdateMember(ctx context.Context, m Member) (Member, error)
	// RemoveMember ends a membership.
	RemoveMember(ctx context.Context, team, user string) error

	GetEndUser(ctx context.Context, id string) (EndUser, error)
	CreateEndUser(ctx context.Context, e EndUser) error
	UpdateEndUser(ctx context.Context, e EndUser) (EndUser, error)
	DeleteEndUser(ctx context.Context, id string) error
	BlockEndUser(ctx context.Context, id string, blocked bool) error
	// ListEndUsers returns every end user, by id.
	ListEndUsers(ctx context.Context) ([]EndUser, error)
	// HasEndUsers reports whether any end user record exists, so that the
	// gateway needs no lookup per request while none does.
	HasEndUsers(ctx context.Context) (bool, error)
}
