package gateway

import (
	"slices"
	"strings"
	"sync"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/router"
)

// wildcardList is the models the wildcard groups serve that the price
// table knows, as LiteLLM's get_known_models_from_wildcard lists them for
// /v1/models and /model_group/info: "anthropic/*" is every Anthropic model
// of the table, as "anthropic/<model>"; "openai/gpt-4*" those whose name
// matches; "*" with a provider's deployment ("openai/*") that provider's
// models; a "*" deployment (model "*") the models of each provider it holds
// a key for. A name another group serves is left to it. Built on first use
// (the table's providers are read then), never at start.
type wildcardList struct {
	once   sync.Once
	models []router.Model
	body   []byte // /v1/models with them (no filter, no restriction)
}

func (h *Handler) wildcardModels() []router.Model {
	h.wild.once.Do(func() {
		seen := map[string]bool{}
		for _, d := range h.cfg.Deployments {
			if !strings.Contains(d.ModelName, "*") || !d.Implemented || d.Blocked {
				continue
			}
			prefix := ""
			if p, _, ok := strings.Cut(d.ModelName, "/"); ok && !strings.Contains(p, "*") {
				prefix = p + "/"
			}
			via := []*config.Deployment{d}
			if d.AnyProvider {
				via = d.Variants()
			}
			for _, v := range via {
				for _, m := range h.prices.ModelsOf(v.Provider) {
					name := prefix + m
					if seen[name] || !config.Match(d.ModelName, name) {
						continue
					}
					if g, err := h.router.Group(name); err != nil || g != d.ModelName {
						continue // another group serves it
					}
					seen[name] = true
					h.wild.models = append(h.wild.models, router.Model{ID: name, OwnedBy: v.Provider})
				}
			}
		}
		slices.SortFunc(h.wild.models, func(a, b router.Model) int { return strings.Compare(a.ID, b.ID) })
		h.wild.body = h.models
		if len(h.wild.models) > 0 {
			h.wild.body = modelsJSON(append(h.router.Models(), h.wild.models...))
		}
	})
	return h.wild.models
}

// allModels is what /v1/models lists for a caller without a restriction:
// the groups, the visible aliases and the wildcard groups' known models.
func (h *Handler) allModelsBody() []byte {
	if !h.hasWildcards {
		return h.models
	}
	h.wildcardModels()
	return h.wild.body
}

// wildcardInfo adds to /model_group/info one entry per model a wildcard
// group serves (wildcardModels), priced from the table, as LiteLLM lists
// each of them.
func (h *Handler) wildcardInfo(p *Principal, filter string, add func(name string, d *config.Deployment)) {
	if !h.hasWildcards {
		return
	}
	for _, m := range h.wildcardModels() {
		if filter != "" && m.ID != filter {
			continue
		}
		g, err := h.router.Group(m.ID)
		if err != nil || allowModel(p, h.cfg.AccessGroups, m.ID, g) != nil {
			continue
		}
		model := strings.TrimPrefix(m.ID, m.OwnedBy+"/")
		d := &config.Deployment{ModelName: m.ID, Provider: m.OwnedBy, Model: model}
		if price, ok := h.prices.Lookup(m.OwnedBy, model, ""); ok {
			d.Price, d.MaxInputTokens, d.MaxOutputTokens = &price, price.MaxInput, price.MaxOutput
		}
		add(m.ID, d)
	}
}
