package adminapi

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// maxModelUSD is the largest budget_limit of a model_max_budget entry: it
// is kept in integer nano-USD, so at most math.MaxInt64 of them.
const maxModelUSD = 9e9

// modelBudgets reads model_max_budget as LiteLLM writes it: an object of
// model name -> {"budget_limit": USD (a number, or a string of one, as
// LiteLLM converts it), "time_period": a budget_duration or null (the
// budget then counts the record's lifetime)}; null or {} clears it. A
// key's model_max_budget uses these names, LiteLLM's budget table
// "max_budget" and "budget_duration": both are read, on keys and budgets.
func (p *params) modelBudgets(name string) (map[string]keys.ModelBudget, bool) {
	m, set := nullable[map[string]map[string]json.RawMessage](p, name, `want an object of model names to {"budget_limit": USD, "time_period": "1d"}`)
	if !set {
		return nil, false
	}
	if len(m) > keys.MaxModels {
		p.fail(badParam(name, "want at most %d models, got %d", keys.MaxModels, len(m)))
		return nil, false
	}
	out := make(map[string]keys.ModelBudget, len(m))
	for model, entry := range m {
		if model == "" || len(model) > keys.MaxNameLen {
			p.fail(badParam(name, "want model names of 1 to %d bytes, got %d", keys.MaxNameLen, len(model)))
			return nil, false
		}
		b, err := modelBudget(entry)
		if err != "" {
			p.fail(badParam(name, "%q: %s", model, err))
			return nil, false
		}
		out[model] = b
	}
	if len(out) == 0 {
		return nil, true
	}
	return out, true
}

// modelBudget reads one entry of model_max_budget; its error says what is
// wrong ("" when nothing is).
func modelBudget(entry map[string]json.RawMessage) (keys.ModelBudget, string) {
	var b keys.ModelBudget
	limit, period := "budget_limit", "time_period"
	for field := range entry {
		switch field {
		case "budget_limit", "time_period":
		case "max_budget":
			limit = field
		case "budget_duration":
			period = field
		default:
			return b, "unknown field " + strconv.Quote(field) + ": want budget_limit (or max_budget) and time_period (or budget_duration)"
		}
	}
	if _, both := entry["budget_limit"]; both && limit != "budget_limit" {
		return b, "give budget_limit or max_budget, not both"
	}
	if _, both := entry["time_period"]; both && period != "time_period" {
		return b, "give time_period or budget_duration, not both"
	}
	raw := bytes.TrimSpace(entry[limit])
	if len(raw) == 0 || string(raw) == "null" {
		return b, "want " + limit + ", a number of USD"
	}
	f, msg := usd(raw)
	if msg != "" {
		return b, limit + ": " + msg
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0) || f < 0:
		return b, limit + ": want a number of USD >= 0, got " + strconv.FormatFloat(f, 'g', -1, 64)
	case f > maxModelUSD || (f > 0 && f < minUSD):
		return b, limit + ": want 0 or a number of USD from 0.000000001 to 9e9, got " + strconv.FormatFloat(f, 'g', -1, 64)
	}
	b.Limit = keys.Nanos(f)
	if raw := bytes.TrimSpace(entry[period]); len(raw) > 0 && string(raw) != "null" {
		if json.Unmarshal(raw, &b.Period) != nil {
			return b, period + ": want a string such as 1d"
		}
		if _, err := keys.ParsePeriod(b.Period); err != nil {
			return b, period + ": want a number and s, m, h, d or mo, such as 30s, 1h, 1d, 7d, 30d, 1mo; got " + strconv.Quote(b.Period)
		}
	}
	return b, ""
}

// modelBudgetsObject renders model_max_budget as LiteLLM stores it: {}
// when none.
func modelBudgetsObject(m map[string]keys.ModelBudget) obj {
	o := make(obj, len(m))
	for model, b := range m {
		o[model] = obj{"budget_limit": keys.USD(b.Limit), "time_period": orNil(b.Period)}
	}
	return o
}

// modelSpendObject renders a key's model_spend: the current period's spend
// in USD of each model of its model_max_budget that has spend.
func modelSpendObject(s keys.Settings, now time.Time) obj {
	o := make(obj, len(s.ModelSpend))
	for model, sp := range s.ModelSpend {
		if b, ok := s.ModelMaxBudget[model]; ok {
			o[model] = keys.USD(keys.CurrentModelSpend(b, sp, now))
		}
	}
	return o
}

// teamModelLimits adds a team's model_rpm_limit and model_tpm_limit to o:
// at the top level (null when none), and in its metadata, where LiteLLM
// keeps them (and its clients read them).
func teamModelLimits(o obj, s keys.Settings) {
	o["model_rpm_limit"], o["model_tpm_limit"] = modelLimitsOrNil(s.ModelRPM), modelLimitsOrNil(s.ModelTPM)
	if len(s.ModelRPM) == 0 && len(s.ModelTPM) == 0 {
		return
	}
	md := map[string]any{}
	_ = json.Unmarshal(metadata(s.Metadata), &md)
	if len(s.ModelRPM) > 0 {
		md["model_rpm_limit"] = s.ModelRPM
	}
	if len(s.ModelTPM) > 0 {
		md["model_tpm_limit"] = s.ModelTPM
	}
	if b, err := json.Marshal(md); err == nil {
		o["metadata"] = json.RawMessage(b)
	}
}
