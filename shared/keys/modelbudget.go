package keys

import (
	"maps"
	"strings"
	"time"
)

// ModelSpend is a record's spend on one model of its model_max_budget:
// Spend nano-USD in the period starting at PeriodStart (zero for a budget
// with no time_period: the lifetime).
type ModelSpend struct {
	PeriodStart time.Time
	Spend       int64 // nano-USD
}

// ResolveModelBudget returns the entry of mb that governs a request for
// model, as LiteLLM resolves it: the model as sent, else the model without
// its provider prefix ("openai/gpt-4o" is governed by "gpt-4o"). name is
// the entry's name, under which its spend is counted.
func ResolveModelBudget(mb map[string]ModelBudget, model string) (name string, b ModelBudget, ok bool) {
	if len(mb) == 0 || model == "" {
		return "", ModelBudget{}, false
	}
	if b, ok := mb[model]; ok {
		return model, b, true
	}
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		if b, ok := mb[model[i+1:]]; ok {
			return model[i+1:], b, true
		}
	}
	return "", ModelBudget{}, false
}

// CurrentModelSpend returns the spend of s that counts against b at now:
// none when s belongs to an earlier period.
func CurrentModelSpend(b ModelBudget, s ModelSpend, now time.Time) int64 {
	if !PeriodStart(b.Period, now).Equal(s.PeriodStart) {
		return 0
	}
	return s.Spend
}

// ModelBudgetExceeded reports whether the budget of s's model_max_budget
// entry for model is spent at now (LiteLLM blocks at spend >= budget), with
// the entry's name, its budget and its current spend.
func (s *Settings) ModelBudgetExceeded(model string, now time.Time) (name string, b ModelBudget, spent int64, exceeded bool) {
	name, b, ok := ResolveModelBudget(s.ModelMaxBudget, model)
	if !ok {
		return "", ModelBudget{}, 0, false
	}
	spent = CurrentModelSpend(b, s.ModelSpend[name], now)
	return name, b, spent, spent >= b.Limit
}

// StepModels returns the per-model spend after adding d to a record with
// model budgets mb and per-model spend cur: the entry governing d.Model
// (ResolveModelBudget) grows in its period, starts over in a later one,
// and is not touched by an earlier period's spend. cur is not changed: a
// changed map is a new one.
func StepModels(mb map[string]ModelBudget, cur map[string]ModelSpend, d SpendDelta) map[string]ModelSpend {
	name, b, ok := ResolveModelBudget(mb, d.Model)
	if !ok || d.Nanos == 0 {
		return cur
	}
	p := PeriodStart(b.Period, d.At)
	old, had := cur[name]
	next := ModelSpend{PeriodStart: p, Spend: d.Nanos}
	switch {
	case had && p.Equal(old.PeriodStart):
		next.Spend += old.Spend
	case had && p.Before(old.PeriodStart):
		return cur // an earlier period's spend
	}
	out := make(map[string]ModelSpend, len(cur)+1)
	maps.Copy(out, cur)
	out[name] = next
	return out
}

// cloneMap copies a map; nil when empty (as DynamoDB stores no empty map).
func cloneMap[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// PeriodStartNext returns the start of the budget period of duration after
// the one containing t; the zero time when duration is "" or invalid.
func PeriodStartNext(duration string, t time.Time) time.Time {
	p, err := ParsePeriod(duration)
	if err != nil {
		return time.Time{}
	}
	return p.Next(t)
}
