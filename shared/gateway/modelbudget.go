package gateway

import (
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
)

// modelBudgetError refuses a request for model when the key's
// model_max_budget entry for it is spent at now, from the key as cached
// (its per-model spend is on the key's item: no read of its own). LiteLLM's
// BudgetExceededError for a key's model budget: a 400 of type
// budget_exceeded naming the key's hash, its alias and the model.
func modelBudgetError(k *keys.Key, model string, now time.Time) error {
	name, b, spent, exceeded := k.ModelBudgetExceeded(model, now)
	if !exceeded {
		return nil
	}
	msg := "LiteLLM Virtual Key: " + k.Hash + ", key_alias: " + aliasOrNone(k.Alias) + ", exceeded budget for model=" + model +
		" (model_max_budget " + name + ": spend " + usd(spent) + ", budget_limit " + usd(b.Limit)
	if b.Period != "" {
		msg += ", time_period " + b.Period + ": the period resets at " + keys.PeriodStartNext(b.Period, now).Format(time.RFC3339)
	}
	return scoped("key", apierr.New(apierr.BudgetExceeded, "%s)", msg))
}

func aliasOrNone(a string) string {
	if a == "" {
		return "None"
	}
	return a
}

func usd(nanos int64) string { return strconv.FormatFloat(keys.USD(nanos), 'f', -1, 64) }

// KindKeyModelBudget is the kind of a strict-budget counter of a key's
// model_max_budget entry (limits.BudgetCounter; id: key hash "#" the
// entry's model name).
const KindKeyModelBudget = "key_model"

// modelBudgetCounter adds to budgets the strict-budget counter of the key's
// model_max_budget entry for model, if it has one: reserved and settled
// like the key's own max_budget, its base the entry's spend as read.
func modelBudgetCounter(budgets []limits.BudgetCounter, k *keys.Key, model string, now time.Time) []limits.BudgetCounter {
	name, b, ok := keys.ResolveModelBudget(k.ModelMaxBudget, model)
	if !ok {
		return budgets
	}
	return append(budgets, limits.BudgetCounter{
		Kind: KindKeyModelBudget, ID: k.Hash + "#" + name,
		Period: keys.PeriodStart(b.Period, now), End: keys.PeriodStartNext(b.Period, now),
		Base: keys.CurrentModelSpend(b, k.ModelSpend[name], now), Max: b.Limit,
	})
}
