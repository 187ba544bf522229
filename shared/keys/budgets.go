package keys

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// KindBudget is the kind of a reusable budget (BudgetRecord): it carries
// limits, never spend.
const KindBudget Kind = "budget"

// BudgetRecord is a reusable budget (LiteLLM's budget table row,
// /budget/new): limits that records link by id (Settings.BudgetID) instead
// of carrying their own. Of its Settings only the budget's fields are
// kept: MaxBudget, SoftBudget, Duration, RPMLimit, TPMLimit, MaxParallel
// and ModelMaxBudget; it has no spend (spend stays on the records that
// link it).
type BudgetRecord struct {
	ID        string
	CreatedAt time.Time
	UpdatedAt time.Time
	CreatedBy string // a user id or "master_key"
	UpdatedBy string
	Settings
}

// Validate checks b; its error wraps ErrInvalid.
func (b BudgetRecord) Validate() error {
	if err := ValidID("budget_id", b.ID); err != nil {
		return err
	}
	what := "budget " + short(b.ID)
	if b.BudgetID != "" {
		return fmt.Errorf("%s: %w: a budget cannot link another budget", what, ErrInvalid)
	}
	if err := validModelBudgets(b.ModelMaxBudget); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return b.Settings.validate(what)
}

// Limits returns only the budget fields of b's Settings: what a BudgetRecord
// keeps of the Settings it is given.
func (b BudgetRecord) Limits() Settings {
	s := b.Settings
	return Settings{
		RPMLimit: s.RPMLimit, TPMLimit: s.TPMLimit, MaxParallel: s.MaxParallel, ModelMaxBudget: s.ModelMaxBudget,
		Budget: Budget{MaxBudget: s.MaxBudget, SoftBudget: s.SoftBudget, Duration: s.Duration, Anchor: s.Anchor},
	}
}

// ApplyTo puts b's limits on s, in place of s's own, as a record linking b
// is limited: max_budget, soft_budget, budget_duration, rpm and tpm
// limits, max parallel requests and model_max_budget (a field b leaves
// unset is unset on s too). Spend and everything else of s stay.
func (b BudgetRecord) ApplyTo(s *Settings) {
	l := clone[BudgetRecord](BudgetRecord{Settings: b.Limits()}).Settings
	s.MaxBudget, s.SoftBudget, s.Duration, s.Anchor = l.MaxBudget, l.SoftBudget, l.Duration, l.Anchor
	s.RPMLimit, s.TPMLimit, s.MaxParallel = l.RPMLimit, l.TPMLimit, l.MaxParallel
	s.ModelMaxBudget = l.ModelMaxBudget
}

// BudgetReader reads budgets (Reader has it; keys.Cached caches it).
type BudgetReader interface {
	GetBudget(ctx context.Context, id string) (BudgetRecord, error)
}

// Linked is a Reader whose records carry the limits of the budget they
// link (Settings.BudgetID) in place of their own: the one place linked
// budgets are resolved for the gateway's checks (keyauth), its admission
// (rpm/tpm, max parallel, strict budgets) and its end user checks. A
// record that links nothing costs no read; a linked budget is read
// through the wrapped Reader (keys.Cached: from this instance's memory
// within the cache TTL, so a changed budget reaches every record linking
// it within that TTL). A linked budget that no longer exists leaves the
// record's own limits.
type Linked struct{ Reader }

// Resolve applies to s the budget it links, if any: the generic step of
// every Get, for a record kind Linked does not read itself.
func (l Linked) Resolve(ctx context.Context, s *Settings) error {
	return ResolveBudget(ctx, l.Reader, s)
}

// ResolveBudget applies to s the budget it links (ApplyTo), read from r;
// nothing when s links none or the budget does not exist.
func ResolveBudget(ctx context.Context, r BudgetReader, s *Settings) error {
	if s.BudgetID == "" {
		return nil
	}
	b, err := r.GetBudget(ctx, s.BudgetID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("budget %s: %w", short(s.BudgetID), err)
	}
	b.ApplyTo(s)
	return nil
}

// link applies to s, read with err, the budget it links.
func (l Linked) link(ctx context.Context, s *Settings, err error) error {
	if err == nil && s.BudgetID != "" {
		err = l.Resolve(ctx, s)
	}
	return err
}

// GetKey implements Reader.
func (l Linked) GetKey(ctx context.Context, hash string) (Key, error) {
	k, err := l.Reader.GetKey(ctx, hash)
	err = l.link(ctx, &k.Settings, err)
	return k, err
}

// GetTeam implements Reader.
func (l Linked) GetTeam(ctx context.Context, id string) (Team, error) {
	t, err := l.Reader.GetTeam(ctx, id)
	err = l.link(ctx, &t.Settings, err)
	return t, err
}

// GetUser implements Reader.
func (l Linked) GetUser(ctx context.Context, id string) (User, error) {
	u, err := l.Reader.GetUser(ctx, id)
	err = l.link(ctx, &u.Settings, err)
	return u, err
}

// GetMember implements Reader.
func (l Linked) GetMember(ctx context.Context, g Kind, id, user string) (Member, error) {
	m, err := l.Reader.GetMember(ctx, g, id, user)
	err = l.link(ctx, &m.Settings, err)
	return m, err
}

// GetEndUser implements Reader.
func (l Linked) GetEndUser(ctx context.Context, id string) (EndUser, error) {
	e, err := l.Reader.GetEndUser(ctx, id)
	err = l.link(ctx, &e.Settings, err)
	return e, err
}

// GetOrganization implements Reader.
func (l Linked) GetOrganization(ctx context.Context, id string) (Organization, error) {
	o, err := l.Reader.GetOrganization(ctx, id)
	err = l.link(ctx, &o.Settings, err)
	return o, err
}

// validModelBudgets checks a model_max_budget map.
func validModelBudgets(m map[string]ModelBudget) error {
	if len(m) > MaxModels {
		return invalid("model_max_budget", "want at most %d models, got %d", MaxModels, len(m))
	}
	for name, mb := range m {
		if name == "" || len(name) > MaxNameLen || mb.Limit < 0 {
			return invalid("model_max_budget", "want model names of 1 to %d bytes and budgets >= 0, got %q", MaxNameLen, short(name))
		}
		if mb.Period != "" {
			if _, err := ParsePeriod(mb.Period); err != nil {
				return invalid("model_max_budget", "%q: %v", short(name), err)
			}
		}
	}
	return nil
}

func (b *BudgetRecord) ref() Ref             { return Ref{KindBudget, b.ID} }
func (b *BudgetRecord) settings() *Settings  { return &b.Settings }
func (b *BudgetRecord) stamps() []*time.Time { return []*time.Time{&b.CreatedAt, &b.UpdatedAt} }
func (b *BudgetRecord) own()                 { b.Settings = b.Limits() }
