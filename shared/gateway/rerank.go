package gateway

import (
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Rerank (POST /v1/rerank and /rerank, as LiteLLM serves them): a
// Cohere/Jina-style body (model, query, documents, top_n) passed through to
// OpenAI-compatible deployments with the model rewritten, through the chat
// stages (keys, model access, limits, routing, spend). It is priced per
// search unit (the media table's input_cost_per_query, LiteLLM's field):
// the units the answer reports (Cohere's meta.billed_units.search_units),
// else one, as LiteLLM counts; a model without a per-query price is priced
// by the tokens the answer reports (Jina's usage), else its cost is unknown.
var _ = registerAPI(&api{op: wire.OpRerank, name: "rerank", paths: []string{"/v1/rerank", "/rerank"},
	noOutput: true, media: true, bill: (*exchange).billRerank, worstCase: rerankWorstCase})

// docsPerSearchUnit is Cohere's search unit: a query with up to 100
// documents.
const docsPerSearchUnit = 100

// billRerank bills a rerank answer.
func (x *exchange) billRerank(a *router.Attempt, call wire.Call, out []byte) int64 {
	u, reported := wire.UsageOf(out)
	if !reported {
		u = wire.Usage{PromptTokens: int64(call.PromptTokens), TotalTokens: int64(call.PromptTokens)}
	}
	if per, ok := perQuery(a.Deployment, a.ProviderModel); ok {
		units := max(gjson.GetBytes(out, "meta.billed_units.search_units").Float(), 1)
		return x.charge(u, false, pricing.NanosOf(per, units), true)
	}
	if p, ok := x.h.priceOf(a); ok && reported {
		return x.charge(u, false, p.CostNanos(u), true)
	}
	return x.charge(u, !reported, 0, false)
}

// rerankWorstCase is the most a rerank request can cost on deployment d:
// the search units of its documents.
func rerankWorstCase(d *config.Deployment, req *wire.Request) (int64, bool) {
	per, ok := perQuery(d, "")
	if !ok {
		return 0, false
	}
	docs := gjson.GetBytes(req.Body, "documents.#").Int()
	return pricing.NanosOf(per, float64(max((docs+docsPerSearchUnit-1)/docsPerSearchUnit, 1))), true
}

// perQuery is the media table's price per search unit of d's model.
func perQuery(d *config.Deployment, model string) (float64, bool) {
	for _, name := range [...]string{d.BaseModel, model, d.Model} {
		if m, ok := pricing.DefaultMedia().Lookup(name); name != "" && ok && m.PerQuery > 0 {
			return m.PerQuery, true
		}
	}
	return 0, false
}
