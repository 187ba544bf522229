package keys

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// Settings are what every record kind carries: who may call which models
// with which limits, whether it is blocked, its metadata and its budget.
// A kind that has no use for a setting leaves it zero (the admin API
// refuses setting it):
//
//	          Models  Aliases  RPM/TPM  Blocked  Metadata  Budget
//	Key       yes     yes      yes      yes      yes       yes
//	Team      yes     yes      yes      yes      yes       yes
//	User      yes     yes      yes      -        yes       yes
//	Member    -       -        -        -        -         yes
//	EndUser   -       -        yes      yes      -         yes
//	Org       yes     -        yes      yes      yes       yes
//	OrgMember -       -        -        -        -         yes
type Settings struct {
	Models []string // allowed model groups; empty: every model (LiteLLM)
	// Aliases map a model name a request sends to the model group it
	// calls (a key's and a user's "aliases", a team's "model_aliases");
	// the gateway applies them before routing and model access. nil: none.
	Aliases  map[string]string
	RPMLimit int64 // 0: none
	TPMLimit int64 // 0: none
	// MaxParallel bounds the requests in flight (max_parallel_requests):
	// nil: none; 0 admits none, as in LiteLLM.
	MaxParallel *int64
	// ModelRPM and ModelTPM are a key's or a team's per-model limits
	// (model_rpm_limit, model_tpm_limit): model name requested -> limit per
	// minute. nil: none.
	ModelRPM, ModelTPM map[string]int64
	// ModelMaxBudget is a per-model budget (model_max_budget): model name
	// requested -> its budget and period. nil: none.
	ModelMaxBudget map[string]ModelBudget
	// ModelSpend is the spend on each model of ModelMaxBudget, by the
	// budget's model name (read only: changed by ApplySpend alone). nil:
	// none yet.
	ModelSpend map[string]ModelSpend
	// BudgetID links a reusable budget (LiteLLM's budget_id): when set, the
	// linked budget's limits (max_budget, soft_budget, rpm/tpm, budget
	// duration, max parallel requests, model_max_budget) apply to this record
	// in place of its own; spend stays on this record. "": none.
	BudgetID string
	Blocked  bool            //
	Metadata json.RawMessage // a JSON object, or nil
	Budget                   // max_budget, soft_budget, budget_duration and spend
}

// ModelBudget is one model's entry of model_max_budget: a budget in
// nano-USD per period ("1d", "30d", ...; "" for no reset), LiteLLM's
// {"budget_limit": 0.5, "time_period": "1d"}.
type ModelBudget struct {
	Limit  int64  // nano-USD
	Period string // budget_duration syntax; "": lifetime
}

// Key is a virtual key.
type Key struct {
	Hash      string    // HashSecret of the secret: 64 lowercase hex digits
	Alias     string    // human-readable name
	TeamID    string    // "" when the key belongs to no team
	UserID    string    // "" when the key belongs to no user
	ExpiresAt time.Time // zero: never
	CreatedAt time.Time // set by CreateKey when zero
	Settings

	// Admin fields (the admin API's; the gateway does not read them).
	KeyName   string    // "sk-...abcd": the secret's prefix and last 4
	Tags      []string  //
	CreatedBy string    // who created it: a user id or "master_key"
	UpdatedAt time.Time //
	UpdatedBy string    //
	// Bound is the scope of a key a team or organization admin wrote for
	// another user (zero: none): its rights end there, whatever else its
	// user is a member of (docs/admin-api.md, Roles).
	Bound Bound
}

// Bound is where a key minted for someone else acts: one team, or the
// teams of one organization, and who bound it there. The admin API sets
// it; keyauth refuses a bound key outside it, and the admin API refuses a
// bound caller everything outside it.
type Bound struct {
	By   string // the user id of the admin who minted (or handed over) the key
	Team string // the team it is bound to; "" when bound to an organization
	Org  string // the organization it is bound to; "" when bound to a team
}

// IsZero reports whether b binds nothing.
func (b Bound) IsZero() bool { return b.Team == "" && b.Org == "" }

// Holds reports whether the team team, in the organization org ("":
// none), is within b. A zero b holds everything.
func (b Bound) Holds(team, org string) bool {
	switch {
	case b.IsZero():
		return true
	case b.Team != "":
		return team != "" && team == b.Team
	}
	return team != "" && org == b.Org
}

// Team groups keys under shared models, limits and budget.
type Team struct {
	ID    string
	Alias string
	// OrganizationID is the organization the team belongs to ("": none);
	// it must exist, and its Teams lists the team (org.go).
	OrganizationID string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	Members        []TeamMember // changed only by AddMember, UpdateMember and RemoveMember
	Settings
}

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
	Email  string // user_email the member was added with ("" when none)
	Role   string // MemberAdmin or MemberUser
}

// User is a person (or a service) that owns keys and belongs to teams.
type User struct {
	ID    string
	Email string
	Alias string // user_alias
	Role  UserRole
	Teams []string // ids of the teams it is a member of (kept by AddMember/RemoveMember)
	// Organizations are the ids of the organizations it is a member of
	// (kept by AddMember/RemoveMember).
	Organizations []string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Settings
}

// EndUser is a customer of the proxy's caller: the "user" field of a request.
type EndUser struct {
	ID        string
	Alias     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// AllowedModelRegion ("eu", "us"; "" any) routes the end user's
	// requests only to deployments in that region (LiteLLM's
	// allowed_model_region).
	AllowedModelRegion string
	Settings
}

// ValidRegion checks an allowed_model_region: "", "eu" or "us", as LiteLLM
// accepts them.
func ValidRegion(r string) error {
	if r != "" && r != "eu" && r != "us" {
		return invalid("allowed_model_region", "want \"eu\" or \"us\", got %q", r)
	}
	return nil
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

// Role returns the role of user in the team, "" if it is not a member.
func (t Team) Role(user string) string {
	for _, m := range t.Members {
		if m.UserID == user {
			return m.Role
		}
	}
	return ""
}

// ErrAliasExists is the error of a key whose alias another key has; it
// wraps ErrExists.
var ErrAliasExists = fmt.Errorf("key_alias: %w", ErrExists)

// Bounds of what a record holds, so that every item stays well below
// DynamoDB's 400 KB (and a key's parts below its 2 KB partition key):
// docs/admin-api.md lists them.
const (
	MaxIDLen       = 256      // bytes of an id or an alias
	MaxMetadataLen = 64 << 10 // bytes of metadata JSON
	MaxModels      = 256      // entries of a models list
	MaxTags        = 64       // entries of a key's tags
	MaxNameLen     = 256      // bytes of a model name, a tag, an email
)

func invalid(param, format string, args ...any) error {
	return &apierr.InvalidParam{Param: param, Reason: fmt.Sprintf(format, args...)}
}

// ValidID checks an id or a key alias that becomes part of a record's
// DynamoDB key, named by its request parameter (team_id, user_id,
// key_alias): 1 to MaxIDLen bytes of UTF-8 with no "#" (the separator of
// the key's parts: MemberID) and no control character, so that no two
// records' keys can be the same string. Its error is an
// apierr.InvalidParam (ErrInvalid) naming param.
func ValidID(param, id string) error {
	switch {
	case id == "" || len(id) > MaxIDLen:
		return invalid(param, "want 1 to %d bytes, got %d", MaxIDLen, len(id))
	case strings.Contains(id, "#"):
		return invalid(param, "%q: '#' is not allowed in ids", short(id))
	case !utf8.ValidString(id) || strings.ContainsFunc(id, unicode.IsControl):
		return invalid(param, "%q: want UTF-8 with no control characters", short(id))
	}
	return nil
}

// ValidTeamID checks a team id (ValidID).
func ValidTeamID(id string) error { return ValidID("team_id", id) }

// optionalID checks an id or alias that may be empty.
func optionalID(param, id string) error {
	if id == "" {
		return nil
	}
	return ValidID(param, id)
}

// validText checks a free-text field (an alias that is not part of a
// key, an email) against max bytes.
func validText(param, v string, max int) error {
	if len(v) > max {
		return invalid(param, "want at most %d bytes, got %d", max, len(v))
	}
	return nil
}

// validNames checks a list of names (models, tags): at most max entries of
// 1 to MaxNameLen bytes.
func validNames(param string, names []string, max int) error {
	if len(names) > max {
		return invalid(param, "want at most %d entries, got %d", max, len(names))
	}
	for _, n := range names {
		if n == "" || len(n) > MaxNameLen {
			return invalid(param, "want names of 1 to %d bytes, got %d", MaxNameLen, len(n))
		}
	}
	return nil
}

// validAliases checks a model alias map: at most MaxModels entries whose
// names and targets are 1 to MaxNameLen bytes.
func validAliases(m map[string]string) error {
	if len(m) > MaxModels {
		return invalid("aliases", "want at most %d entries, got %d", MaxModels, len(m))
	}
	for from, to := range m {
		if from == "" || len(from) > MaxNameLen || to == "" || len(to) > MaxNameLen {
			return invalid("aliases", "want names and model groups of 1 to %d bytes, got %q: %q", MaxNameLen, short(from), short(to))
		}
	}
	return nil
}

// validate checks the settings of the record what names.
func (s Settings) validate(what string) error {
	var object map[string]any
	switch {
	case len(s.Metadata) > MaxMetadataLen:
		return fmt.Errorf("%s: %w", what, invalid("metadata", "want at most %d bytes of JSON, got %d", MaxMetadataLen, len(s.Metadata)))
	case len(s.Metadata) > 0 && json.Unmarshal(s.Metadata, &object) != nil:
		return fmt.Errorf("%s: %w: metadata is not a JSON object", what, ErrInvalid)
	case s.RPMLimit < 0 || s.TPMLimit < 0:
		return fmt.Errorf("%s: %w: negative rpm or tpm limit", what, ErrInvalid)
	case s.MaxParallel != nil && *s.MaxParallel < 0:
		return fmt.Errorf("%s: %w: negative max_parallel_requests", what, ErrInvalid)
	case !validModelLimits(s.ModelRPM) || !validModelLimits(s.ModelTPM):
		return fmt.Errorf("%s: %w: model_rpm_limit and model_tpm_limit want at most %d model names of 1 to %d bytes and limits >= 0", what, ErrInvalid, MaxModels, MaxNameLen)
	case validModelBudgets(s.ModelMaxBudget) != nil:
		return fmt.Errorf("%s: %w: model_max_budget wants at most %d model names of 1 to %d bytes, budgets >= 0 and a valid time_period", what, ErrInvalid, MaxModels, MaxNameLen)
	case slices.Contains(s.Models, ""):
		return fmt.Errorf("%s: %w: empty model name", what, ErrInvalid)
	}
	if err := firstErr(validNames("models", s.Models, MaxModels), validAliases(s.Aliases), optionalID("budget_id", s.BudgetID)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return s.Budget.validate(what)
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Validate checks k; its error wraps ErrInvalid.
func (k Key) Validate() error {
	if !ValidHash(k.Hash) {
		// Never echo the value: it may be a raw secret passed by mistake.
		return fmt.Errorf("key hash: %w: want 64 lowercase hex digits (HashSecret), got %d bytes", ErrInvalid, len(k.Hash))
	}
	what := "key " + k.Hash[:8]
	if err := firstErr(optionalID("key_alias", k.Alias), optionalID("team_id", k.TeamID), optionalID("user_id", k.UserID),
		validNames("tags", k.Tags, MaxTags), validText("key_name", k.KeyName, MaxNameLen),
		optionalID("bound_team_id", k.Bound.Team), optionalID("bound_organization_id", k.Bound.Org), validText("bound_by", k.Bound.By, MaxIDLen)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return k.Settings.validate(what)
}

// Validate checks t; its error wraps ErrInvalid.
func (t Team) Validate() error {
	if err := firstErr(ValidTeamID(t.ID), validText("team_alias", t.Alias, MaxIDLen), optionalID("organization_id", t.OrganizationID)); err != nil {
		return err
	}
	return t.Settings.validate("team " + t.ID)
}

// Validate checks u; its error wraps ErrInvalid.
func (u User) Validate() error {
	if err := firstErr(ValidID("user_id", u.ID), validText("user_alias", u.Alias, MaxIDLen), validText("user_email", u.Email, MaxNameLen)); err != nil {
		return err
	}
	if u.Role != "" && !u.Role.Valid() {
		return fmt.Errorf("user %s: %w: role %q", short(u.ID), ErrInvalid, u.Role)
	}
	return u.Settings.validate("user " + short(u.ID))
}

// Validate checks e; its error wraps ErrInvalid.
func (e EndUser) Validate() error {
	if err := firstErr(ValidID("user_id", e.ID), validText("alias", e.Alias, MaxIDLen), ValidRegion(e.AllowedModelRegion)); err != nil {
		return err
	}
	return e.Settings.validate("end user " + short(e.ID))
}

// record is what the generic memory table and the cache know of a record
// kind, on its pointer.
type record[T any] interface {
	*T
	ref() Ref
	settings() *Settings
	// stamps are its times, which stores keep in UTC at millisecond
	// precision (as DynamoDB stores them); the first is CreatedAt.
	stamps() []*time.Time
	// own replaces the slices of its own fields (beyond Settings) by copies.
	own()
	Validate() error
}

func (k *Key) ref() Ref                { return Ref{KindKey, k.Hash} }
func (k *Key) settings() *Settings     { return &k.Settings }
func (k *Key) stamps() []*time.Time    { return []*time.Time{&k.CreatedAt, &k.UpdatedAt, &k.ExpiresAt} }
func (k *Key) own()                    { k.Tags = slices.Clone(k.Tags) }
func (t *Team) ref() Ref               { return Ref{KindTeam, t.ID} }
func (t *Team) settings() *Settings    { return &t.Settings }
func (t *Team) stamps() []*time.Time   { return []*time.Time{&t.CreatedAt, &t.UpdatedAt} }
func (t *Team) own()                   { t.Members = slices.Clone(t.Members) }
func (u *User) ref() Ref               { return Ref{KindUser, u.ID} }
func (u *User) settings() *Settings    { return &u.Settings }
func (u *User) stamps() []*time.Time   { return []*time.Time{&u.CreatedAt, &u.UpdatedAt} }
func (u *User) own()                   { u.Teams, u.Organizations = slices.Clone(u.Teams), slices.Clone(u.Organizations) }
func (e *EndUser) ref() Ref            { return Ref{KindEndUser, e.ID} }
func (e *EndUser) settings() *Settings { return &e.Settings }
func (e *EndUser) stamps() []*time.Time {
	return []*time.Time{&e.CreatedAt, &e.UpdatedAt}
}
func (e *EndUser) own() {}

// clone returns a deep copy of v.
func clone[T any, P record[T]](v T) T {
	s := P(&v).settings()
	s.Models = slices.Clone(s.Models)
	s.Aliases = maps.Clone(s.Aliases)
	if len(s.Aliases) == 0 {
		s.Aliases = nil // as DynamoDB stores no empty map
	}
	s.Metadata = slices.Clone(s.Metadata)
	if s.MaxParallel != nil {
		n := *s.MaxParallel
		s.MaxParallel = &n
	}
	s.ModelRPM, s.ModelTPM = cloneModelLimits(s.ModelRPM), cloneModelLimits(s.ModelTPM)
	s.ModelMaxBudget, s.ModelSpend = cloneMap(s.ModelMaxBudget), cloneMap(s.ModelSpend)
	s.Budget = cloneBudget(s.Budget)
	P(&v).own()
	return v
}

// normalize puts v's times in UTC at millisecond precision.
func normalize[T any, P record[T]](v *T) {
	for _, t := range P(v).stamps() {
		*t = ms(*t)
	}
	s := P(v).settings()
	s.Anchor = ms(s.Anchor)
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

// validModelLimits checks a per-model limit map.
func validModelLimits(m map[string]int64) bool {
	if len(m) > MaxModels {
		return false
	}
	for name, v := range m {
		if name == "" || len(name) > MaxNameLen || v < 0 {
			return false
		}
	}
	return true
}

// cloneModelLimits copies a per-model limit map; nil when empty (as
// DynamoDB stores no empty map).
func cloneModelLimits(m map[string]int64) map[string]int64 {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
