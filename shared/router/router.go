// Package router decides, for each request, which deployment is tried, what
// happens after a failure, and which failing deployments are skipped for a
// while — LiteLLM's Router semantics (alias -> model group -> deployment,
// retries within a group, fallbacks across groups, cooldowns), without the
// bugs its users report.
//
// The router owns policy, not I/O: the gateway hands Do a function that makes
// one attempt, which returns its error and its Outcome: whether it already
// committed output to the client, or ended the request as its own failure.
package router

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
)

// Options are the router's collaborators; zero values pick production defaults.
type Options struct {
	Cooldowns cooldown.Store                                   // nil: cooldowns kept in this process only
	Now       func() time.Time                                 // clock
	Sleep     func(ctx context.Context, d time.Duration) error // backoff waits
	Rand      func() float64                                   // in [0,1)
	Logger    *slog.Logger
	// OnCooldown, if set, is called when a failure this instance recorded
	// started a deployment's cooldown (metrics), with the failure's status.
	OnCooldown func(group, deployment string, status int, until time.Time)
	// Previous is the router this one replaces (a model list reloaded):
	// a deployment with the same id that calls the same provider, model,
	// base and credentials keeps its counters (in flight, latency, usage).
	// Cooldowns live in Cooldowns, by id, and so survive as well.
	Previous *Router
	// OnResolve, if set, is called each time a client's model is resolved
	// to its group (Resolve, Group, and Do or a fallback walk without a
	// Target): the gateway's tests count the resolutions of a request.
	OnResolve func(model string)
}

// Router routes requests over a loaded config. It is safe for concurrent use.
type Router struct {
	cfg       *config.Config
	rs        config.RouterSettings
	groups    map[string]*group
	wildcards []*group // groups whose name contains '*', in config order
	aliases   map[string]string
	selector  Selector
	cooldowns cooldown.Store
	now       func() time.Time
	sleep     func(context.Context, time.Duration) error
	rand      func() float64
	log       *slog.Logger
	onCool    func(group, deployment string, status int, until time.Time)
	onResolve func(model string)
}

type group struct {
	name          string
	nodes         []*node  // implemented deployments
	ids           []string // their ids, for cooldown reads
	unimplemented []*config.Deployment
	maxInput      int // largest known context window; 0 when any is unknown
}

// New builds a router for cfg.
func New(cfg *config.Config, opt Options) *Router {
	r := &Router{
		cfg:       cfg,
		rs:        cfg.Router,
		groups:    map[string]*group{},
		aliases:   cfg.Router.ModelGroupAlias,
		selector:  NewSelector(cfg.Router.RoutingStrategy),
		cooldowns: opt.Cooldowns,
		now:       opt.Now,
		sleep:     opt.Sleep,
		rand:      opt.Rand,
		log:       opt.Logger,
		onCool:    opt.OnCooldown,
		onResolve: opt.OnResolve,
	}
	if r.cooldowns == nil {
		r.cooldowns = cooldown.NewMemory()
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.sleep == nil {
		r.sleep = sleepCtx
	}
	if r.rand == nil {
		r.rand = defaultRand
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	prev := opt.Previous.statsByID()
	for _, d := range cfg.Deployments {
		g := r.groups[d.ModelName]
		if g == nil {
			g = &group{name: d.ModelName}
			r.groups[d.ModelName] = g
			if strings.Contains(d.ModelName, "*") {
				r.wildcards = append(r.wildcards, g)
			}
		}
		if d.Implemented {
			n := &node{d: d, provider: d.Provider + "/" + d.Model, stats: new(stats)}
			if p, ok := prev[d.ID]; ok && sameCallee(p.d, d) {
				n.stats = p.stats
			}
			g.nodes = append(g.nodes, n)
			g.ids = append(g.ids, d.ID)
		} else {
			g.unimplemented = append(g.unimplemented, d)
		}
	}
	// Overlapping wildcards: the most specific serves ("openai/*" before
	// "*"), as in LiteLLM, not the first in the file.
	slices.SortStableFunc(r.wildcards, func(a, b *group) int {
		switch {
		case config.MoreSpecific(a.name, b.name):
			return -1
		case config.MoreSpecific(b.name, a.name):
			return 1
		}
		return 0
	})
	for _, g := range r.groups {
		g.maxInput = 0
		for _, n := range g.nodes {
			if n.d.MaxInputTokens == 0 {
				g.maxInput = 0
				break
			}
			g.maxInput = max(g.maxInput, n.d.MaxInputTokens)
		}
	}
	return r
}

// statsByID returns r's nodes by deployment id (nil r: none).
func (r *Router) statsByID() map[string]*node {
	if r == nil {
		return nil
	}
	out := map[string]*node{}
	for _, g := range r.groups {
		for _, n := range g.nodes {
			out[n.d.ID] = n
		}
	}
	return out
}

// sameCallee reports whether a and b call the same thing: provider, model,
// base, version and credentials.
func sameCallee(a, b *config.Deployment) bool {
	return a.Provider == b.Provider && a.Model == b.Model && a.APIBase == b.APIBase &&
		a.APIKey == b.APIKey && a.APIVersion == b.APIVersion && a.AWS == b.AWS
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Model is one entry of /v1/models.
type Model struct {
	ID      string
	OwnedBy string
}

// Models lists the model groups with a routable deployment and the visible
// aliases, sorted.
func (r *Router) Models() []Model {
	var out []Model
	for name, g := range r.groups {
		if len(g.nodes) > 0 && !strings.Contains(name, "*") {
			out = append(out, Model{ID: name, OwnedBy: g.nodes[0].d.Provider})
		}
	}
	for alias, target := range r.aliases {
		if !r.rs.HiddenAliases[alias] {
			if g := r.groups[target]; g != nil && len(g.nodes) > 0 {
				out = append(out, Model{ID: alias, OwnedBy: g.nodes[0].d.Provider})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// WildcardRoutes lists the wildcard model groups ("openai/*") with a
// routable deployment, in config order of specificity (most specific first).
func (r *Router) WildcardRoutes() []Model {
	var out []Model
	for _, g := range r.wildcards {
		if len(g.nodes) > 0 {
			out = append(out, Model{ID: g.name, OwnedBy: g.nodes[0].d.Provider})
		}
	}
	return out
}

// lookup maps a client's model to its group: alias first, then an exact
// group, then the first wildcard group that matches (nil: none). name is
// the model after alias resolution: the group's name, or for a wildcard
// group the concrete model it serves ("openai/gpt-4o" for "openai/*").
func (r *Router) lookup(model string) (g *group, name string) {
	if r.onResolve != nil {
		r.onResolve(model)
	}
	name = model
	if target, ok := r.aliases[model]; ok {
		name = target
	}
	if g := r.groups[name]; g != nil {
		return g, name
	}
	for _, g := range r.wildcards {
		if config.Match(g.name, name) {
			return g, name
		}
	}
	return nil, ""
}

// resolve is lookup, with the client's error for a model no group serves.
func (r *Router) resolve(model string) (*group, string, error) {
	if g, name := r.lookup(model); g != nil {
		return g, name, nil
	}
	return nil, "", r.errNotFound(model)
}

func (r *Router) errNotFound(model string) error {
	return ErrNotFound(model, r.Models())
}

// ErrNotFound is the client's error for a model no group serves, listing
// the models it may ask for instead.
func ErrNotFound(model string, available []Model) error {
	names := make([]string, 0, len(available))
	for _, m := range available {
		names = append(names, m.ID)
	}
	e := apierr.New(apierr.ModelNotFound, "model %q not found; available models: %s", model, strings.Join(names, ", "))
	e.Param = "model"
	return e
}

// Target is a model resolved to its group, once per request: the gateway
// resolves a request's model and its own fallbacks (Resolve, Lookup) and
// hands them to Do in Request.Target and Request.FallbackTargets, so that
// nothing resolves them again. The zero Target is no resolution at all.
type Target struct {
	r    *Router
	g    *group
	name string // the model after the config's aliases
}

// Resolve resolves model to its group; the error is the client's (model
// not found).
func (r *Router) Resolve(model string) (Target, error) {
	g, name, err := r.resolve(model)
	return Target{r: r, g: g, name: name}, err
}

// Lookup is Resolve without the error (a fallback no group serves is
// skipped, not refused): Found tells.
func (r *Router) Lookup(model string) Target {
	g, name := r.lookup(model)
	return Target{r: r, g: g, name: name}
}

// Found reports whether t names a group.
func (t Target) Found() bool { return t.g != nil }

// Group is t's group name ("" when none serves it).
func (t Target) Group() string {
	if t.g == nil {
		return ""
	}
	return t.g.name
}

// of reports whether t is a resolution by r (and not the zero Target, or
// one by a router since replaced).
func (t Target) of(r *Router) bool { return t.r == r && t.r != nil }

// Group returns the model group a client's model resolves to.
func (r *Router) Group(model string) (string, error) {
	g, _, err := r.resolve(model)
	if err != nil {
		return "", err
	}
	return g.name, nil
}

// Deployments returns the deployments of a group (for admin and tests).
func (r *Router) Deployments(groupName string) []*config.Deployment {
	g := r.groups[groupName]
	if g == nil {
		return nil
	}
	out := make([]*config.Deployment, len(g.nodes))
	for i, n := range g.nodes {
		out[i] = n.d
	}
	return out
}

func (r *Router) errNoRoute(g *group) error {
	if len(g.unimplemented) > 0 {
		if why := g.unimplemented[0].Unusable; why != "" {
			return apierr.New(apierr.NotImplemented, "model group %q has no usable deployment: %s", g.name, why)
		}
		return apierr.New(apierr.NotImplemented, "model group %q has no usable deployment: provider %q is not implemented yet", g.name, g.unimplemented[0].Provider)
	}
	return apierr.New(apierr.ModelNotFound, "model group %q has no deployments", g.name)
}

// String describes the router for start-up logs.
func (r *Router) String() string {
	return fmt.Sprintf("router(strategy=%s, groups=%d)", r.rs.RoutingStrategy, len(r.groups))
}
