package ddbkeys

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// The attributes of keys.Settings, on every record item.
//
//	models                   L of S; empty: every model
//	aliases                  M of S (model alias -> model group); absent: none
//	rpm_limit, tpm_limit     N; 0: none
//	max_parallel_requests    N; absent: none (0 admits none)
//	model_rpm_limit, model_tpm_limit  M of N (model -> limit); absent: none
//	model_max_budget         M of M (model -> {l: N USD, p: S time_period, absent: lifetime}); absent: none
//	blocked                  BOOL
//	metadata                 S (a JSON object); absent: none
//	max_budget, soft_budget  N (USD); absent: none
//	budget_duration          S; absent: no period
//	spend                    N (USD, exact decimal of nano-dollars); only ever ADDed
//	period_start             N (epoch ms) start of the period period_spend counts
//	period_spend             N (USD)
//	soft_alerted             N (epoch ms) the period whose soft budget crossing was logged
//	budget_id                S: the reusable budget it links (budget.go); absent: none
//	model_spend              M of M (model_max_budget model -> {p: N epoch ms period start, 0 for
//	                         the lifetime; s: N USD spent in it}); written by the spend pipeline
//	                         alone (modelspend.go), only on records with a model_max_budget
const (
	attrModels      = "models"
	attrAliases     = "aliases"
	attrRPM         = "rpm_limit"
	attrTPM         = "tpm_limit"
	attrParallel    = "max_parallel_requests"
	attrModelRPM    = "model_rpm_limit"
	attrModelTPM    = "model_tpm_limit"
	attrBlocked     = "blocked"
	attrMetadata    = "metadata"
	attrMaxBudget   = "max_budget"
	attrSoftBudget  = "soft_budget"
	attrDuration    = "budget_duration"
	attrSpend       = "spend"
	attrPeriodStart = "period_start"
	attrAnchor      = "budget_anchor" // when budget_duration was set (keys.Budget.Anchor)
	attrPeriodSpend = "period_spend"
	attrSoftAlerted = "soft_alerted"
	attrBudgetID    = "budget_id"
	attrModelBudget = "model_max_budget"
	attrModelSpend  = "model_spend"
)

// attrs are the attributes of a record's settings to SET, and the names
// of its absent optional ones to REMOVE. Spend attributes are never among
// them.
type attrs struct {
	set    ddb.Item
	remove []string
}

// opt SETs name to v when present, else REMOVEs it.
func (a *attrs) opt(name string, v types.AttributeValue, present bool) {
	if present {
		a.set[name] = v
	} else {
		a.remove = append(a.remove, name)
	}
}

func (a *attrs) time(name string, t time.Time) { a.opt(name, ddb.N(t.UnixMilli()), !t.IsZero()) }

// settingsAttrs encodes s.
func settingsAttrs(s keys.Settings) attrs {
	a := attrs{set: ddb.Item{
		attrModels:  ddb.List(s.Models),
		attrRPM:     ddb.N(s.RPMLimit),
		attrTPM:     ddb.N(s.TPMLimit),
		attrBlocked: ddb.Bool(s.Blocked),
	}}
	if s.MaxParallel != nil {
		a.set[attrParallel] = ddb.N(*s.MaxParallel)
	} else {
		a.remove = append(a.remove, attrParallel)
	}
	a.opt(attrModelRPM, modelLimitsAttr(s.ModelRPM), len(s.ModelRPM) > 0)
	a.opt(attrModelTPM, modelLimitsAttr(s.ModelTPM), len(s.ModelTPM) > 0)
	a.opt(attrModelBudget, modelBudgetsAttr(s.ModelMaxBudget), len(s.ModelMaxBudget) > 0)
	a.opt(attrMetadata, ddb.S(string(s.Metadata)), len(s.Metadata) > 0)
	a.opt(attrAliases, aliasesAttr(s.Aliases), len(s.Aliases) > 0)
	b := s.Budget
	a.opt(attrMaxBudget, usdAttr(b.MaxBudget), b.MaxBudget != nil)
	a.opt(attrSoftBudget, usdAttr(b.SoftBudget), b.SoftBudget != nil)
	a.opt(attrDuration, ddb.S(b.Duration), b.Duration != "")
	a.time(attrAnchor, b.Anchor)
	a.opt(attrBudgetID, ddb.S(s.BudgetID), s.BudgetID != "")
	return a
}

// aliasedAttrs encodes s with the alias and updated_at that team, user
// and end user items have too.
func aliasedAttrs(s keys.Settings, alias string, updated time.Time) attrs {
	a := settingsAttrs(s)
	a.set[attrAlias] = ddb.S(alias)
	a.time(attrUpdated, updated)
	return a
}

func usdAttr(v *float64) types.AttributeValue {
	if v == nil {
		return nil
	}
	return ddb.F(*v)
}

// decodeSettings reads the settings and spend of a record item.
func decodeSettings(item ddb.Item) keys.Settings {
	s := keys.Settings{
		Models: ddb.Strings(item, attrModels), RPMLimit: ddb.Int0(item, attrRPM), TPMLimit: ddb.Int0(item, attrTPM),
		Blocked: ddb.BoolOf(item, attrBlocked), Metadata: getJSON(item, attrMetadata), Aliases: decodeAliases(item),
		Budget: keys.Budget{Duration: ddb.String(item, attrDuration), Anchor: getTime(item, attrAnchor)}, BudgetID: ddb.String(item, attrBudgetID),
	}
	s.ModelRPM, s.ModelTPM = decodeModelLimits(item, attrModelRPM), decodeModelLimits(item, attrModelTPM)
	s.ModelMaxBudget = decodeModelBudgets(item)
	if n, ok := ddb.Int(item, attrParallel); ok {
		s.MaxParallel = &n
	}
	if v, ok := ddb.Float(item, attrMaxBudget); ok {
		s.MaxBudget = &v
	}
	if v, ok := ddb.Float(item, attrSoftBudget); ok {
		s.SoftBudget = &v
	}
	st := decodeSpendState(item)
	s.Spend, s.PeriodStart, s.PeriodSpend, s.SoftAlerted = keys.USD(st.Total), st.PeriodStart, keys.USD(st.Period), st.SoftAlerted
	s.ModelSpend = st.Models
	return s
}

func decodeSpendState(item ddb.Item) keys.SpendState {
	return keys.SpendState{
		Total: getNanos(item, attrSpend), Period: getNanos(item, attrPeriodSpend),
		PeriodStart: getTime(item, attrPeriodStart), SoftAlerted: getTime(item, attrSoftAlerted),
		Models: decodeModelSpend(item),
	}
}

// newItem is the item of a new record: its settings and own attributes
// (a), key, kind, no spend yet and its creation time.
func newItem(a attrs, pk string, kind keys.Kind, created time.Time) ddb.Item {
	item := a.set
	item[attrPK] = ddb.S(pk)
	item[attrKind] = ddb.S(string(kind))
	item[attrSpend] = money(0)
	item[attrCreated] = ddb.N(created.UnixMilli())
	return item
}

// getNanos reads a money attribute exactly.
func getNanos(item ddb.Item, name string) int64 {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, err := keys.ParseDecimalUSD(v.Value)
	if err != nil { // written by something else: fall back to the float
		x, _ := ddb.Float(item, name)
		return keys.Nanos(x)
	}
	return n
}

func money(nanos int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: keys.DecimalUSD(nanos)}
}

// getTime reads an epoch-milliseconds attribute; zero when absent.
func getTime(item ddb.Item, name string) time.Time {
	if ms, ok := ddb.Int(item, name); ok {
		return time.UnixMilli(ms).UTC()
	}
	return time.Time{}
}

func getJSON(item ddb.Item, name string) json.RawMessage {
	if v := ddb.String(item, name); v != "" {
		return json.RawMessage(v)
	}
	return nil
}

func sortedNames(m ddb.Item) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return sortedStrings(out)
}

func sortedStrings(s []string) []string {
	slices.Sort(s)
	return s
}

func aliasesAttr(m map[string]string) types.AttributeValue { return mapAttr(m, ddb.S) }

// decodeAliases reads the aliases map; nil when absent or empty.
func decodeAliases(item ddb.Item) map[string]string {
	return decodeMap(item, attrAliases, func(m ddb.Item, from string) (string, bool) { return ddb.String(m, from), true })
}

func modelLimitsAttr(m map[string]int64) types.AttributeValue { return mapAttr(m, ddb.N) }

// decodeModelLimits reads a per-model limit map; nil when absent or empty.
func decodeModelLimits(item ddb.Item, name string) map[string]int64 {
	return decodeMap(item, name, func(m ddb.Item, model string) (int64, bool) { return ddb.Int0(m, model), true })
}

// mapAttr encodes m as a map attribute, each value by enc.
func mapAttr[V any](m map[string]V, enc func(V) types.AttributeValue) types.AttributeValue {
	v := make(ddb.Item, len(m))
	for name, x := range m {
		v[name] = enc(x)
	}
	return &types.AttributeValueMemberM{Value: v}
}

// decodeMap reads the map attribute name of item, each entry by dec (an
// entry dec does not read is left out); nil when absent or empty.
func decodeMap[V any](item ddb.Item, name string, dec func(m ddb.Item, key string) (V, bool)) map[string]V {
	m, ok := item[name].(*types.AttributeValueMemberM)
	if !ok || len(m.Value) == 0 {
		return nil
	}
	out := make(map[string]V, len(m.Value))
	for key := range m.Value {
		if v, ok := dec(m.Value, key); ok {
			out[key] = v
		}
	}
	return out
}
