package gateway

import (
	"context"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keyauth"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// The plan: what a request resolves once, after its body is parsed and its
// model aliases are applied, and every later stage reads. Model access
// (auth.go), the strict-budget reservation (strict.go), the router's
// request, admission (admission.go, through the principal's records), the
// spend event and the metrics read it; none resolves the model again.

// plan is a request's resolution: its model group and its own fallbacks.
// It lives in the request's Completion (no allocation of its own); the
// principal's records and the end user are Completion.Principal's.
type plan struct {
	target router.Target // the model (after aliases) resolved to its group
	err    error         // the resolution's error: no group serves the model
	// fallbacks are the request's own fallbacks ("fallbacks"), resolved in
	// their order: the first few in fbs, more in extra.
	n     int
	fbs   [4]router.Target
	extra []router.Target
}

// resolve resolves req's model and its fallbacks with rt, once. A request
// without a model resolves nothing (it is refused before routing).
func (pl *plan) resolve(rt *router.Router, req *wire.Request) {
	if req.Model == "" {
		return
	}
	pl.target, pl.err = rt.Resolve(req.Model)
	pl.n = len(req.Fallbacks)
	if pl.n > len(pl.fbs) {
		pl.extra = make([]router.Target, pl.n)
	}
	for i, fb := range req.Fallbacks {
		*pl.fallback(i) = rt.Lookup(fb)
	}
}

// group is the request's model group ("" when none serves it).
func (pl *plan) group() string { return pl.target.Group() }

// fallback is the i-th of the request's own fallbacks, resolved.
func (pl *plan) fallback(i int) *router.Target {
	if pl.extra != nil {
		return &pl.extra[i]
	}
	return &pl.fbs[i]
}

// fallbackTargets is the request's own fallbacks resolved, for the router
// (router.Request.FallbackTargets).
func (pl *plan) fallbackTargets() []router.Target {
	if pl.extra != nil {
		return pl.extra
	}
	return pl.fbs[:pl.n]
}

// reach calls fn with each model group the request's own fallbacks can
// reach (each found one, in order; none when the request disables
// fallbacks): what the strict-budget reservation must cover beyond its
// group and the configured fallbacks.
func (pl *plan) reach(req *wire.Request, fn func(group string)) {
	if !req.FallbacksSet || req.NoFallbacks {
		return
	}
	for i := range pl.n {
		if t := pl.fallback(i); t.Found() {
			fn(t.Group())
		}
	}
}

// configuredReach is every model group the configured fallbacks
// (fallbacks, context_window_fallbacks, content_policy_fallbacks,
// default_fallbacks, transitively) lead to from groups, groups included,
// each once, in the order reached (startup and strict media reservations).
func (h *Handler) configuredReach(groups ...string) []string {
	rs := &h.cfg.Router
	seen := make(map[string]bool, len(groups))
	var out []string
	for len(groups) > 0 {
		g, err := h.router.Group(groups[0])
		groups = groups[1:]
		if err != nil || seen[g] {
			continue
		}
		seen[g] = true
		out = append(out, g)
		for _, fbs := range [][]config.Fallback{rs.Fallbacks, rs.ContextWindowFallbacks, rs.ContentPolicyFallbacks} {
			groups = append(groups, config.FallbacksFor(fbs, g)...)
		}
		groups = append(groups, rs.DefaultFallbacks...)
	}
	return out
}

// reachOf is group's configured reach, as computed at startup (h.reach)
// when it is there.
func (h *Handler) reachOf(group string) []string {
	if r, ok := h.reach[group]; ok {
		return r
	}
	return h.configuredReach(group)
}

// remaining is how long a request may still run at now: its context's
// deadline, else the router's timeout (a request's worst case, for the
// expiry of what it holds: leases, strict-budget reservations).
func (h *Handler) remaining(ctx context.Context, now time.Time) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return dl.Sub(now)
	}
	if t := h.cfg.Router.Timeout; t > 0 {
		return t
	}
	return config.DefaultTimeout
}

// record is one of the principal's records, of a kind (keyauth's).
type (
	record     = keyauth.Record
	recordKind = keyauth.Kind
)

const (
	recKey  = keyauth.KindKey
	recUser = keyauth.KindUser
)

// recordKinds names each kind of the principal's records (keyauth.Kind)
// where the stages need it: the spend and budget record kind, the limits
// scope kind and a key's or team's per-model scope, and the model-access
// name ("": the kind has no model list of its own). Kind.Scope is the
// metrics scope of a refusal.
var recordKinds = [keyauth.Kinds]struct {
	store       keys.Kind
	limit       limits.Kind
	modelLimit  limits.Kind
	modelAccess string
}{
	keyauth.KindKey:     {keys.KindKey, limits.KindKey, limits.KindKeyModel, "key"},
	keyauth.KindTeam:    {keys.KindTeam, limits.KindTeam, limits.KindTeamModel, "team"},
	keyauth.KindUser:    {keys.KindUser, limits.KindUser, "", "user"},
	keyauth.KindMember:  {keys.KindMember, limits.KindMember, "", ""},
	keyauth.KindEndUser: {keys.KindEndUser, limits.KindEndUser, "", ""},
	keyauth.KindOrg:     {keys.KindOrg, limits.KindOrg, "", "org"}, // LiteLLM's object_type "org"
}

// records walks p's records in keyauth's one order: key, team, user, team
// membership, end user, organization. It allocates nothing; a nil p (no
// authentication) has none.
func (p *Principal) records(yield func(keyauth.Record) bool) {
	if p != nil {
		p.Records.All(yield)
	}
}
