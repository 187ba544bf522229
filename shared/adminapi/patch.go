package adminapi

import (
	"encoding/json"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// patch is what a request body changes on a record of type T, parsed and
// validated once, before the record is read: one setter per field the
// body gives, for the record's Settings and for its own fields. Applied
// onto the record as stored, it changes nothing else.
type patch[T any] struct {
	settings []func(*keys.Settings)
	fields   []func(*T)
	email    string // user_email, which also finds a user to update
	duration string // a key's duration, as given ("" when not)
}

func (pt *patch[T]) apply(v *T, s *keys.Settings) {
	for _, set := range pt.settings {
		set(s)
	}
	for _, set := range pt.fields {
		set(v)
	}
}

func (pt *patch[T]) setting(given bool, set func(*keys.Settings)) {
	if given {
		pt.settings = append(pt.settings, set)
	}
}

func (pt *patch[T]) field(given bool, set func(*T)) {
	if given {
		pt.fields = append(pt.fields, set)
	}
}

// str reads a string field onto the record: null or "" clears it.
func (pt *patch[T]) str(p *params, name string, f func(*T) *string) {
	v, ok := p.str(name)
	pt.field(ok || p.has(name), func(r *T) { *f(r) = v })
}

// aliasedPatch starts the patch of a record whose alias is the field
// name (read with str), as keys, teams and end users are.
func aliasedPatch[T any](p *params, name string, alias func(*T) *string) patch[T] {
	var pt patch[T]
	pt.str(p, name, alias)
	return pt
}

// setting reads the field name with read onto the Settings, when the body
// gives it (null included: it clears the setting). A field read with an
// error adds a setter too, never applied: the body is refused.
func setting[T, V any](pt *patch[T], p *params, name string, read func(*params, string) (V, bool), set func(*keys.Settings, V)) {
	v, ok := read(p, name)
	pt.setting(ok || p.has(name), func(s *keys.Settings) { set(s, v) })
}

func (pt *patch[T]) models(p *params) {
	setting(pt, p, "models", (*params).strs, func(s *keys.Settings, v []string) { s.Models = v })
}

// budgetAndLimits reads max_budget, soft_budget, budget_duration, then
// rpm_limit and tpm_limit.
func (pt *patch[T]) budgetAndLimits(p *params) {
	pt.budget(p)
	pt.limits(p)
}

func (pt *patch[T]) budget(p *params) {
	setting(pt, p, "max_budget", (*params).money, func(s *keys.Settings, v *float64) { s.MaxBudget = v })
	setting(pt, p, "soft_budget", (*params).money, func(s *keys.Settings, v *float64) { s.SoftBudget = v })
	setting(pt, p, "budget_duration", (*params).period, setDuration)
}

// setDuration sets budget_duration; a new one starts its chain of resets
// now, where LiteLLM computes budget_reset_at (keys.Budget.Anchor).
func setDuration(s *keys.Settings, v string) {
	if v != s.Duration {
		s.Duration, s.Anchor = v, time.Now().UTC().Truncate(time.Millisecond)
	}
}

func (pt *patch[T]) limits(p *params) {
	setting(pt, p, "rpm_limit", (*params).limit, func(s *keys.Settings, v int64) { s.RPMLimit = v })
	setting(pt, p, "tpm_limit", (*params).limit, func(s *keys.Settings, v int64) { s.TPMLimit = v })
}

func (pt *patch[T]) parallel(p *params) {
	setting(pt, p, "max_parallel_requests", (*params).maxParallel, func(s *keys.Settings, v *int64) { s.MaxParallel = v })
}

// budgetID reads budget_id, the reusable budget the record links (null
// or "" unlinks it); the handler checks it (Handler.linkBudget).
func (pt *patch[T]) budgetID(p *params) {
	setting(pt, p, "budget_id", (*params).str, func(s *keys.Settings, v string) { s.BudgetID = v })
}

// modelLimits reads model_rpm_limit and model_tpm_limit (keys and teams).
func (pt *patch[T]) modelLimits(p *params) {
	setting(pt, p, "model_rpm_limit", (*params).modelLimits, func(s *keys.Settings, v map[string]int64) { s.ModelRPM = v })
	setting(pt, p, "model_tpm_limit", (*params).modelLimits, func(s *keys.Settings, v map[string]int64) { s.ModelTPM = v })
}

func (pt *patch[T]) blocked(p *params) {
	setting(pt, p, "blocked", (*params).boolean, func(s *keys.Settings, v bool) { s.Blocked = v })
}

func (pt *patch[T]) metadata(p *params) {
	setting(pt, p, "metadata", (*params).object, func(s *keys.Settings, v json.RawMessage) { s.Metadata = v })
}

// keyPatch reads the settings of a key; now is when a duration starts.
func keyPatch(p *params, now time.Time) patch[keys.Key] {
	pt := aliasedPatch(p, "key_alias", func(k *keys.Key) *string { return &k.Alias })
	if d, s, ok := p.duration("duration"); ok {
		pt.duration = s
		pt.field(true, func(k *keys.Key) {
			k.ExpiresAt = time.Time{}
			if d > 0 {
				k.ExpiresAt = now.Add(d)
			}
		})
	}
	pt.models(p)
	pt.budget(p)
	pt.str(p, "user_id", func(k *keys.Key) *string { return &k.UserID })
	pt.str(p, "team_id", func(k *keys.Key) *string { return &k.TeamID })
	pt.limits(p)
	pt.modelLimits(p)
	setting(&pt, p, "model_max_budget", (*params).modelBudgets, func(s *keys.Settings, v map[string]keys.ModelBudget) { s.ModelMaxBudget = v })
	pt.metadata(p)
	tags, set := keyTags(p)
	pt.field(set, func(k *keys.Key) { k.Tags = tags })
	pt.blocked(p)
	pt.aliases(p, "aliases")
	p.refuse(whySpend, "spend")
	p.refuse(whyRotation, "auto_rotate", "rotation_interval")
	pt.parallel(p)
	p.refuse(whyKeyOrg, "organization_id")
	p.refuseCommon()
	p.ignore("key_type", "send_invite_email", "soft_budget_cooldown")
	return pt
}

// teamPatch reads the settings of a team.
func teamPatch(p *params) patch[keys.Team] {
	pt := aliasedPatch(p, "team_alias", func(t *keys.Team) *string { return &t.Alias })
	pt.str(p, "organization_id", func(t *keys.Team) *string { return &t.OrganizationID })
	pt.models(p)
	pt.budgetAndLimits(p)
	pt.blocked(p)
	pt.metadata(p)
	p.refuse(whyTags, "tags")
	pt.aliases(p, "model_aliases")
	p.refuse(whySpend, "spend")
	p.refuse(whyMemberLimit, "team_member_budget", "team_member_rpm_limit", "team_member_tpm_limit",
		"team_member_key_duration", "team_member_permissions", "default_team_member_models")
	p.refuse(whyRotation, "secret_manager_settings")
	pt.parallel(p)
	pt.modelLimits(p)
	p.refuse(whyModelLimit, "model_max_budget")
	p.refuseCommon()
	return pt
}

// userPatch reads the settings of a user.
func userPatch(p *params) patch[keys.User] {
	var pt patch[keys.User]
	email, ok := p.str("user_email")
	pt.email = email
	pt.field(ok || p.has("user_email"), func(u *keys.User) { u.Email = email })
	pt.str(p, "user_alias", func(u *keys.User) *string { return &u.Alias })
	if v, ok := p.str("user_role"); ok {
		if !keys.UserRole(v).Valid() {
			p.fail(badParam("user_role", "want proxy_admin, proxy_admin_viewer, internal_user or internal_user_viewer, got %q", v))
		}
		pt.field(true, func(u *keys.User) { u.Role = keys.UserRole(v) })
	}
	pt.models(p)
	pt.budgetAndLimits(p)
	pt.metadata(p)
	pt.aliases(p, "aliases")
	p.refuse(whyUserOrg, "organizations", "organization_id")
	p.refuse("blocking a user is not built; block its keys", "blocked")
	pt.parallel(p)
	p.refuse(whyModelRate, "model_rpm_limit", "model_tpm_limit")
	p.refuse(whyModelLimit, "model_max_budget")
	p.refuseCommon()
	p.ignore("send_invite_email", "sso_user_id", "key_alias", "duration", "tags")
	return pt
}

// endUserPatch reads the settings of an end user.
func endUserPatch(p *params) patch[keys.EndUser] {
	pt := aliasedPatch(p, "alias", func(e *keys.EndUser) *string { return &e.Alias })
	pt.blocked(p)
	pt.budgetAndLimits(p)
	pt.str(p, "allowed_model_region", func(e *keys.EndUser) *string { return &e.AllowedModelRegion })
	if v, ok := p.str("allowed_model_region"); ok {
		if err := keys.ValidRegion(v); err != nil {
			p.fail(badParam("allowed_model_region", "want \"eu\" or \"us\", got %q", v))
		}
	}
	p.refuse(whyDefaultModel, "default_model")
	pt.budgetID(p)
	p.refuse(whyParallel, "max_parallel_requests")
	p.refuse(whyModelLimit, "model_max_budget")
	p.refuse(whySpend, "spend")
	p.refuse(whyPermissions, "object_permission")
	return pt
}
