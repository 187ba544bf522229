package ddbkeys

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

func modelBudgetsAttr(m map[string]keys.ModelBudget) types.AttributeValue {
	return mapAttr(m, func(b keys.ModelBudget) types.AttributeValue {
		e := ddb.Item{"l": money(b.Limit)}
		if b.Period != "" {
			e["p"] = ddb.S(b.Period)
		}
		return &types.AttributeValueMemberM{Value: e}
	})
}

// decodeModelBudgets reads model_max_budget; nil when absent or empty.
func decodeModelBudgets(item ddb.Item) map[string]keys.ModelBudget {
	return decodeMap(item, attrModelBudget, func(m ddb.Item, model string) (keys.ModelBudget, bool) {
		e, ok := m[model].(*types.AttributeValueMemberM)
		if !ok {
			return keys.ModelBudget{}, false
		}
		return keys.ModelBudget{Limit: getNanos(e.Value, "l"), Period: ddb.String(e.Value, "p")}, true
	})
}

// decodeModelSpend reads model_spend; nil when absent or empty.
func decodeModelSpend(item ddb.Item) map[string]keys.ModelSpend {
	return decodeMap(item, attrModelSpend, func(m ddb.Item, model string) (keys.ModelSpend, bool) {
		e, ok := m[model].(*types.AttributeValueMemberM)
		if !ok {
			return keys.ModelSpend{}, false
		}
		var start time.Time
		if ms, _ := ddb.Int(e.Value, "p"); ms != 0 {
			start = time.UnixMilli(ms).UTC()
		}
		return keys.ModelSpend{PeriodStart: start, Spend: getNanos(e.Value, "s")}, true
	})
}

func modelSpendAttr(s keys.ModelSpend) types.AttributeValue {
	p := int64(0)
	if !s.PeriodStart.IsZero() {
		p = s.PeriodStart.UnixMilli()
	}
	return &types.AttributeValueMemberM{Value: ddb.Item{"p": ddb.N(p), "s": money(s.Spend)}}
}

// modelSpendUpdate returns the SET clauses (comma separated, "" when
// nothing changed) and the condition (" AND ..." terms) that move a
// record's per-model spend from what was read (from) to to, adding to
// names and values. Like the record's own spend: the same period grows by
// an arithmetic SET (so concurrent writers never lose an increment),
// conditioned on the period start read; a new period or a new model is
// SET whole, conditioned on the entry as read (absent, or its period
// start). With no model_spend read, the whole map is SET, conditioned on
// its absence. So a concurrent change of what was read cancels the
// transaction (re-read and retry), and a record with no model_max_budget
// gets no attribute.
func modelSpendUpdate(from, to map[string]keys.ModelSpend, names map[string]string, values ddb.Item) (sets, cond string) {
	var changed []string
	for _, model := range slices.Sorted(maps.Keys(to)) {
		if to[model] != from[model] {
			changed = append(changed, model)
		}
	}
	if len(changed) == 0 {
		return "", ""
	}
	names["#ms"] = attrModelSpend
	if from == nil {
		whole := make(ddb.Item, len(to))
		for model, s := range to {
			whole[model] = modelSpendAttr(s)
		}
		values[":ms"] = &types.AttributeValueMemberM{Value: whole}
		return "#ms = :ms", " AND attribute_not_exists(#ms)"
	}
	cond = " AND attribute_exists(#ms)"
	for i, model := range changed {
		n, v := fmt.Sprintf("#m%d", i), fmt.Sprintf(":m%d", i)
		names[n] = model
		old, had := from[model]
		next := to[model]
		if sets != "" {
			sets += ", "
		}
		switch {
		case !had:
			sets += fmt.Sprintf("#ms.%s = %s", n, v)
			values[v] = modelSpendAttr(next)
			cond += fmt.Sprintf(" AND attribute_not_exists(#ms.%s)", n)
			continue
		case next.PeriodStart.Equal(old.PeriodStart):
			names["#mss"] = "s"
			sets += fmt.Sprintf("#ms.%s.#mss = #ms.%s.#mss + %s", n, n, v)
			values[v] = money(next.Spend - old.Spend)
		default:
			sets += fmt.Sprintf("#ms.%s = %s", n, v)
			values[v] = modelSpendAttr(next)
		}
		p := int64(0)
		if !old.PeriodStart.IsZero() {
			p = old.PeriodStart.UnixMilli()
		}
		names["#msp"] = "p"
		values[v+"p"] = ddb.N(p)
		cond += fmt.Sprintf(" AND #ms.%s.#msp = %sp", n, v)
	}
	return sets, cond
}
