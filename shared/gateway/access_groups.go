package gateway

import (
	"slices"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// checkModels checks one record's models list (what names "key", "team"
// or "user"): empty allows every model; else the model as sent, its group,
// "*", "all-proxy-models", or an access group holding the group. The
// refusal is LiteLLM's (its message, 403, param "model").
func checkModels(what string, allowed []string, ag map[string][]string, model, group string) error {
	if len(allowed) == 0 {
		return nil
	}
	for _, a := range allowed {
		if a == model || a == group || a == "*" || a == "all-proxy-models" {
			return nil
		}
		if ag != nil { // no lookup at all when no access group is configured
			if groups, ok := ag[a]; ok && slices.Contains(groups, group) {
				return nil
			}
		}
	}
	return apierr.ModelAccessDenied(what, allowed, model)
}

// holdsGroup reports whether p may name access group name: a record with
// no models (every model) or one whose list names it; every record of p
// must.
func holdsGroup(p *Principal, name string) bool {
	ok := func(models []string) bool {
		return len(models) == 0 || slices.Contains(models, name) || slices.Contains(models, "*") || slices.Contains(models, "all-proxy-models")
	}
	return (p.Key == nil || ok(p.Key.Models)) && (p.Team == nil || ok(p.Team.Models)) && (p.User == nil || p.Team != nil || ok(p.User.Models)) &&
		(p.Org == nil || ok(p.Org.Models))
}
