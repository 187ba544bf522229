package config

import (
	"fmt"

	"github.com/sluice-gw/sluice/shared/pricing"
)

// configPrice is the price the deployment's own keys set.
func (d *Deployment) configPrice() *pricing.Price {
	return &pricing.Price{
		Input: d.InputCostPerToken, Output: d.OutputCostPerToken,
		CacheRead: d.CacheReadCostPerToken, CacheWrite: d.CacheWriteCostPerToken,
		MaxInput: d.MaxInputTokens, MaxOutput: d.MaxOutputTokens,
	}
}

// ResolvePrices gives every deployment its price, once, at startup: its own
// price keys win; else the table's price for model_info.base_model, then
// for "provider/model", then for the model name alone (pricing.Table.Lookup).
// The table also fills the context window (MaxInputTokens) and output limit
// (MaxOutputTokens) the config does not set, so that pre-call checks and
// context-window fallbacks know them.
//
// A mock deployment the table does not know costs nothing (a known $0). Any
// other deployment without a price gets a warning, and its calls an unknown
// cost (not $0); a wildcard deployment ("openai/*") is priced per model
// when called. Resolving again with another table replaces what the
// previous one filled in. The new warnings are appended to c.Warnings and
// returned.
func (c *Config) ResolvePrices(t *pricing.Table) []Warning {
	kept := c.Warnings[:0]
	for _, w := range c.Warnings {
		if !w.price {
			kept = append(kept, w)
		}
	}
	c.Warnings = kept
	var warnings []Warning
	for i, d := range c.Deployments {
		if d.priceFromTable {
			d.Price, d.priceFromTable = nil, false
		}
		if d.maxInFromTable {
			d.MaxInputTokens, d.maxInFromTable = 0, false
		}
		if d.maxOutFromTable {
			d.MaxOutputTokens, d.maxOutFromTable = 0, false
		}
		p, found := t.Lookup(d.Provider, d.Model, d.BaseModel)
		if found {
			if d.MaxInputTokens == 0 && p.MaxInput > 0 {
				d.MaxInputTokens, d.maxInFromTable = p.MaxInput, true
			}
			if d.MaxOutputTokens == 0 && p.MaxOutput > 0 {
				d.MaxOutputTokens, d.maxOutFromTable = p.MaxOutput, true
			}
		}
		switch {
		case d.PriceSet:
			d.Price = d.configPrice()
			continue
		case found:
			d.Price = &p
		case d.Protocol == ProtocolMock:
			d.Price = &pricing.Price{}
		case d.Model == "*" || !d.Implemented:
			continue // priced per model when called / never called
		default:
			w := Warning{
				Path: fmt.Sprintf("model_list[%d].litellm_params.model", i), Line: d.line, price: true,
				Message: fmt.Sprintf("no price for deployment %s (%s/%s); its cost is unknown: set input_cost_per_token and output_cost_per_token, or model_info.base_model to a priced model",
					d.ID, d.Provider, d.Model),
			}
			warnings = append(warnings, w)
			continue
		}
		d.priceFromTable = true
		d.Price.MaxInput, d.Price.MaxOutput = d.MaxInputTokens, d.MaxOutputTokens
	}
	c.Warnings = append(c.Warnings, warnings...)
	return warnings
}
