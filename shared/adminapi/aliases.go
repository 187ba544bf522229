package adminapi

import (
	"github.com/sluice-gw/sluice/shared/keys"
)

// Model aliases: a key's and a user's "aliases" and a team's
// "model_aliases", {"alias": "model group"}, which the gateway applies to
// a request's model before routing and model access (gateway/auth.go).

// aliasMap reads a model alias map: a JSON object of non-empty strings;
// null or {} clears it.
func (p *params) aliasMap(name string) (map[string]string, bool) {
	m, set := nullable[map[string]string](p, name, `want a JSON object of model names, such as {"my-gpt": "gpt-4o"}`)
	if !set {
		return nil, false
	}
	if len(m) > keys.MaxModels {
		p.fail(badParam(name, "want at most %d aliases, got %d", keys.MaxModels, len(m)))
		return nil, false
	}
	for from, to := range m {
		if from == "" || to == "" || len(from) > keys.MaxNameLen || len(to) > keys.MaxNameLen {
			p.fail(badParam(name, "want aliases and model names of 1 to %d bytes, got %q: %q", keys.MaxNameLen, from, to))
			return nil, false
		}
	}
	if len(m) == 0 {
		return nil, true
	}
	return m, true
}

// aliases reads the alias map field name onto the Settings.
func (pt *patch[T]) aliases(p *params, name string) {
	setting(pt, p, name, (*params).aliasMap, func(s *keys.Settings, v map[string]string) { s.Aliases = v })
}

// aliasesOrEmpty renders an alias map as LiteLLM does: {} when none.
func aliasesOrEmpty(m map[string]string) any {
	if len(m) == 0 {
		return obj{}
	}
	return m
}

// teamAliasFields adds a team's model_aliases to o as LiteLLM shows them:
// in litellm_model_table (its model table row, null when the team has
// none) and, for convenience, at the top level.
func teamAliasFields(o obj, m map[string]string) {
	o["model_aliases"] = aliasesOrEmpty(m)
	o["litellm_model_table"] = nil
	if len(m) > 0 {
		o["litellm_model_table"] = obj{"model_aliases": m}
	}
}
