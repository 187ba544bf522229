package config

import (
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

var strategies = map[string]string{
	"simple-shuffle":         "simple-shuffle",
	"shuffle":                "simple-shuffle",
	"least-busy":             "least-busy",
	"latency-based-routing":  "latency-based-routing",
	"usage-based-routing-v2": "usage-based-routing-v2",
	"usage-based-routing":    "usage-based-routing-v2",
	"cost-based-routing":     "cost-based-routing",
}

// LiteLLM's RetryPolicy / AllowedFailsPolicy field names -> our error classes.
var policyClasses = map[string]string{
	"BadRequestError":             "bad_request",
	"AuthenticationError":         "auth",
	"TimeoutError":                "timeout",
	"Timeout":                     "timeout",
	"RateLimitError":              "rate_limited",
	"ContentPolicyViolationError": "content_policy",
	"InternalServerError":         "server_error",
	"ServiceUnavailableError":     "server_error",
	"APIConnectionError":          "connection_error",
	"NotFoundError":               "not_found",
	"ContextWindowExceededError":  "context_window_exceeded",
}

// routerSettings merges litellm_settings and router_settings (the latter wins).
func (l *loader) routerSettings() error {
	r := &l.cfg.Router
	*r = RouterSettings{
		RoutingStrategy: DefaultStrategy,
		NumRetries:      DefaultNumRetries,
		AllowedFails:    DefaultAllowedFails,
		CooldownTime:    DefaultCooldownTime,
		MaxFallbacks:    DefaultMaxFallbacks,
		MaxRetryAfter:   DefaultMaxRetryAfter,
		Timeout:         DefaultTimeout,
	}
	merged := map[string]setting{}
	for k, s := range l.litellm {
		merged[k] = s
	}
	for k, s := range l.router {
		if prev, ok := merged[k]; ok {
			l.warn(prev.path, prev.node, "overridden by %s", s.path)
		}
		merged[k] = s
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic warnings
	for _, key := range keys {
		s := merged[key]
		if err := l.routerKey(r, key, s.path, s.node); err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) routerKey(r *RouterSettings, key, p string, v *yaml.Node) error {
	var err error
	switch key {
	case "routing_strategy":
		var s string
		if s, err = l.scalar(p, v); err != nil {
			return err
		}
		canon, ok := strategies[s]
		if !ok {
			return errAt(p, v, "unknown routing strategy %s (simple-shuffle, least-busy, latency-based-routing, usage-based-routing-v2, cost-based-routing)", shown(v, s))
		}
		if s == "usage-based-routing" {
			l.warn(p, v, "usage-based-routing is deprecated in LiteLLM; using usage-based-routing-v2")
		}
		r.RoutingStrategy = canon
	case "num_retries", "retries":
		r.NumRetries, err = l.count(p, v)
	case "max_retries":
		l.warn(p, v, "read as num_retries")
		r.NumRetries, err = l.count(p, v)
	case "allowed_fails":
		r.AllowedFails, err = l.count(p, v)
	case "cooldown_time":
		r.CooldownTime, err = l.seconds(p, v)
	case "disable_cooldowns":
		r.DisableCooldowns, err = l.boolv(p, v)
	case "timeout", "request_timeout":
		// LiteLLM passes this to every provider call: a per-attempt timeout.
		r.AttemptTimeout, err = l.seconds(p, v)
	case "stream_timeout":
		r.StreamTimeout, err = l.seconds(p, v)
	case "retry_after":
		r.RetryAfter, err = l.seconds(p, v)
	case "max_retry_after":
		r.MaxRetryAfter, err = l.seconds(p, v)
	case "max_fallbacks":
		r.MaxFallbacks, err = l.count(p, v)
	case "enable_pre_call_checks":
		r.EnablePreCallChecks, err = l.boolv(p, v)
	case "enable_tag_filtering":
		r.EnableTagFiltering, err = l.boolv(p, v)
	case "fallbacks":
		r.Fallbacks, err = l.fallbacks(p, v)
	case "context_window_fallbacks":
		r.ContextWindowFallbacks, err = l.fallbacks(p, v)
	case "content_policy_fallbacks":
		r.ContentPolicyFallbacks, err = l.fallbacks(p, v)
	case "default_fallbacks":
		r.DefaultFallbacks, l.defaultAt, err = l.strListAt(p, v)
	case "retry_policy":
		r.RetryPolicy, err = l.policy(p, v, "Retries")
	case "allowed_fails_policy":
		r.AllowedFailsPolicy, err = l.policy(p, v, "AllowedFails")
	case "model_group_retry_policy":
		r.ModelGroupRetryPolicy = map[string]map[string]int{}
		err = pairs(p, v, func(group string, gv *yaml.Node, gp string) error {
			pol, err := l.policy(gp, gv, "Retries")
			r.ModelGroupRetryPolicy[group] = pol
			return err
		})
	case "model_group_alias":
		l.aliasAt = map[string]pos{}
		r.ModelGroupAlias = map[string]string{}
		r.HiddenAliases = map[string]bool{}
		err = pairs(p, v, func(alias string, av *yaml.Node, ap string) error {
			if av = deref(av); av.Kind == yaml.MappingNode {
				return pairs(ap, av, func(k string, vv *yaml.Node, kp string) error {
					var err error
					switch k {
					case "model":
						r.ModelGroupAlias[alias], err = l.scalar(kp, vv)
						l.aliasAt[alias] = pos{kp, deref(vv).Line}
					case "hidden":
						var h bool
						h, err = l.boolv(kp, vv)
						r.HiddenAliases[alias] = h
					default:
						l.warn(kp, vv, "not supported yet; ignored")
					}
					return err
				})
			}
			s, err := l.scalar(ap, av)
			r.ModelGroupAlias[alias] = s
			l.aliasAt[alias] = pos{ap, av.Line}
			return err
		})
	default:
		s := litellmSection
		if strings.HasPrefix(p, "router_settings") {
			s = routerSection
		}
		l.unsupported(s, key, p, v)
	}
	return err
}

// policy reads a RetryPolicy or AllowedFailsPolicy mapping.
func (l *loader) policy(p string, v *yaml.Node, suffix string) (map[string]int, error) {
	out := map[string]int{}
	err := pairs(p, v, func(k string, vv *yaml.Node, kp string) error {
		class, ok := policyClasses[strings.TrimSuffix(k, suffix)]
		if !ok {
			l.warn(kp, vv, "unknown error type; ignored")
			return nil
		}
		n, err := l.count(kp, vv)
		out[class] = n
		return err
	})
	return out, err
}

// fallbacks reads [{group: [fallback, ...]}, ...] or {group: [...]}.
func (l *loader) fallbacks(p string, v *yaml.Node) ([]Fallback, error) {
	var out []Fallback
	add := func(m *yaml.Node, mp string) error {
		return pairs(mp, m, func(from string, tv *yaml.Node, tp string) error {
			to, at, err := l.strListAt(tp, tv)
			if err != nil {
				return err
			}
			out = append(out, Fallback{From: from, To: to, at: at})
			return nil
		})
	}
	switch v = deref(v); v.Kind {
	case yaml.MappingNode:
		return out, add(v, p)
	case yaml.SequenceNode:
		for i, m := range v.Content {
			if err := add(m, fmt.Sprintf("%s[%d]", p, i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return nil, nil
		}
	}
	return nil, errAt(p, v, "must be a list of {model_group: [fallback groups]}")
}

// validate checks cross-references once everything is read. An alias or
// fallback naming a group that does not exist is warned (with the closest
// group) and left out, as LiteLLM starts with it; a fallback cycle stops
// the start.
func (l *loader) validate() error {
	r := &l.cfg.Router
	groups := map[string]bool{}
	for _, d := range l.cfg.Deployments {
		groups[d.ModelName] = true
	}
	names := l.cfg.Groups()
	unknown := func(at pos, name, what string) {
		l.cfg.Warnings = append(l.cfg.Warnings, Warning{Path: at.path, Line: at.line,
			Message: fmt.Sprintf("unknown model group %q%s; this %s is left out", name, didYouMean(name, names), what)})
	}
	aliases := make([]string, 0, len(r.ModelGroupAlias))
	for alias := range r.ModelGroupAlias {
		aliases = append(aliases, alias)
	}
	sort.Strings(aliases) // the same warnings every time
	for _, alias := range aliases {
		if target := r.ModelGroupAlias[alias]; !groups[target] {
			unknown(l.aliasAt[alias], target, "alias")
			delete(r.ModelGroupAlias, alias)
			delete(r.HiddenAliases, alias)
		}
	}
	exists := func(name string) bool {
		if groups[name] {
			return true
		}
		if _, ok := r.ModelGroupAlias[name]; ok {
			return true
		}
		for g := range groups {
			if strings.Contains(g, "*") && Match(g, name) {
				return true
			}
		}
		return false
	}
	keep := func(to []string, at []pos) []string {
		out := to[:0]
		for j, name := range to {
			if exists(name) {
				out = append(out, name)
			} else if j < len(at) {
				unknown(at[j], name, "fallback")
			}
		}
		return out
	}
	for _, list := range []*[]Fallback{&r.Fallbacks, &r.ContextWindowFallbacks, &r.ContentPolicyFallbacks} {
		fbs := (*list)[:0]
		for _, fb := range *list {
			if fb.To = keep(fb.To, fb.at); len(fb.To) > 0 {
				fbs = append(fbs, fb)
			}
		}
		*list = fbs
	}
	r.DefaultFallbacks = keep(r.DefaultFallbacks, l.defaultAt)
	for _, list := range []struct {
		name string
		fbs  []Fallback
	}{{"fallbacks", r.Fallbacks}, {"context_window_fallbacks", r.ContextWindowFallbacks}, {"content_policy_fallbacks", r.ContentPolicyFallbacks}} {
		if cyc := fallbackCycle(list.fbs, names); cyc != nil {
			return &Error{Path: list.name, Msg: "fallback cycle: " + strings.Join(cyc, " -> ")}
		}
	}
	return nil
}

// FallbacksFor returns the fallback groups configured for group in fbs: the
// exact entry wins, else the most specific wildcard entry that matches (the
// first of equals).
func FallbacksFor(fbs []Fallback, group string) []string {
	for _, fb := range fbs {
		if fb.From == group {
			return fb.To
		}
	}
	var best *Fallback
	for i := range fbs {
		fb := &fbs[i]
		if strings.Contains(fb.From, "*") && Match(fb.From, group) && (best == nil || MoreSpecific(fb.From, best.From)) {
			best = fb
		}
	}
	if best == nil {
		return nil
	}
	return best.To
}

// fallbackCycle finds a cycle in the graph group -> fallbacks, with wildcard
// sources expanded over the known groups, and returns it (first node repeated
// at the end), or nil.
func fallbackCycle(fbs []Fallback, groups []string) []string {
	nodes := map[string]bool{}
	for _, g := range groups {
		nodes[g] = true
	}
	for _, fb := range fbs {
		if !strings.Contains(fb.From, "*") {
			nodes[fb.From] = true
		}
		for _, t := range fb.To {
			nodes[t] = true
		}
	}
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(n string) bool
	visit = func(n string) bool {
		color[n] = grey
		stack = append(stack, n)
		for _, t := range FallbacksFor(fbs, n) {
			if t == n && !exactEntry(fbs, n) {
				continue // "*": [backup] does not make backup fall back to itself
			}
			switch color[t] {
			case grey:
				for i, s := range stack {
					if s == t {
						found = append(append([]string{}, stack[i:]...), t)
						return true
					}
				}
			case white:
				if visit(t) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, n := range names {
		if color[n] == white && visit(n) {
			return found
		}
	}
	return nil
}

func exactEntry(fbs []Fallback, group string) bool {
	for _, fb := range fbs {
		if fb.From == group {
			return true
		}
	}
	return false
}

// Match reports whether name matches pattern, where '*' matches any run of
// characters (including '/'), as LiteLLM's wildcard model names do. It
// takes at most len(pattern)*len(name) steps (name is the client's): on a
// mismatch it only moves the last star on, never backtracks further.
func Match(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0 // the last star seen, and where its run ends in name
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0: // let the last star take one more byte
			mark++
			p, n = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
