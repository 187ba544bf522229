package ddbkeys

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// A reusable budget's item: pk "budget#<id>", kind "budget", the budget
// attributes of settings.go (max_budget, soft_budget, budget_duration,
// rpm_limit, tpm_limit, max_parallel_requests; never spend),
// model_max_budget (as on every record: settings.go), created_at and updated_at (N, epoch ms), created_by
// and updated_by (S).
func budgetPK(id string) string { return refPK(keys.KindBudget, id) }

// budgetAttrs encodes b (created_at and created_by aside).
func budgetAttrs(b keys.BudgetRecord) attrs {
	s := b.Limits()
	a := attrs{set: ddb.Item{attrRPM: ddb.N(s.RPMLimit), attrTPM: ddb.N(s.TPMLimit)}}
	if s.MaxParallel != nil {
		a.set[attrParallel] = ddb.N(*s.MaxParallel)
	} else {
		a.remove = append(a.remove, attrParallel)
	}
	a.opt(attrMaxBudget, usdAttr(s.MaxBudget), s.MaxBudget != nil)
	a.opt(attrSoftBudget, usdAttr(s.SoftBudget), s.SoftBudget != nil)
	a.opt(attrDuration, ddb.S(s.Duration), s.Duration != "")
	a.time(attrAnchor, s.Anchor)
	a.opt(attrModelBudget, modelBudgetsAttr(s.ModelMaxBudget), len(s.ModelMaxBudget) > 0)
	a.set[attrUpdatedBy] = ddb.S(b.UpdatedBy)
	a.time(attrUpdated, b.UpdatedAt)
	return a
}

func decodeBudget(id string, item ddb.Item) keys.BudgetRecord {
	s := decodeSettings(item)
	b := keys.BudgetRecord{
		ID: id, CreatedAt: getTime(item, attrCreated), UpdatedAt: getTime(item, attrUpdated),
		CreatedBy: ddb.String(item, attrCreatedBy), UpdatedBy: ddb.String(item, attrUpdatedBy),
	}
	b.Settings = keys.BudgetRecord{Settings: s}.Limits()
	return b
}

// GetBudget implements keys.Reader.
func (st *Store) GetBudget(ctx context.Context, id string) (keys.BudgetRecord, error) {
	return read(ctx, st, keys.Ref{Kind: keys.KindBudget, ID: id}, keys.ValidID("budget_id", id) == nil, decodeBudget)
}

// createBudget is Budgets().Create.
func (st *Store) createBudget(ctx context.Context, b keys.BudgetRecord) error {
	if err := prepared(b, &b.CreatedAt); err != nil {
		return err
	}
	if b.UpdatedAt.IsZero() {
		b.UpdatedAt = b.CreatedAt
	}
	a := budgetAttrs(b)
	a.set[attrCreatedBy] = ddb.S(b.CreatedBy)
	item := newItem(a, budgetPK(b.ID), keys.KindBudget, b.CreatedAt)
	delete(item, attrSpend) // a budget carries no spend
	return st.create(ctx, item, "budget "+b.ID)
}

// DeleteBudget implements keys.Admin.
func (st *Store) DeleteBudget(ctx context.Context, id string) error {
	what := "budget " + id
	if keys.ValidID("budget_id", id) != nil {
		return fmt.Errorf("%s: %w", what, keys.ErrNotFound)
	}
	ctx, cancel := st.call(ctx)
	defer cancel()
	_, err := st.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(st.table), Key: ddb.PK(budgetPK(id)), ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	if ddb.ConditionFailed(err) {
		return fmt.Errorf("%s: %w", what, keys.ErrNotFound)
	}
	if err != nil {
		return wrap("delete", what, err)
	}
	return nil
}

// BudgetLinks implements keys.Admin: a consistent Scan filtered on
// budget_id, so that every kind that links budgets (the organizations'
// too) is found.
func (st *Store) BudgetLinks(ctx context.Context, id string) ([]keys.Ref, error) {
	items, err := st.scanWhere(ctx, "#b = :b", map[string]string{"#b": attrBudgetID}, ddb.Item{":b": ddb.S(id)}, "links of budget "+id)
	if err != nil {
		return nil, err
	}
	out := make([]keys.Ref, 0, len(items))
	for _, item := range items {
		kind, rid, _ := strings.Cut(ddb.String(item, attrPK), "#")
		out = append(out, keys.Ref{Kind: keys.Kind(kind), ID: rid})
	}
	slices.SortFunc(out, func(a, b keys.Ref) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// linkBudgets applies to each record read in states the budget it links
// (budgets maps a linked record to its budget id), with one strongly
// consistent BatchGetItem of the budgets; none when no record links one.
func (st *Store) linkBudgets(ctx context.Context, states map[keys.Ref]keys.RecordSpend) error {
	var ids []string
	for _, rs := range states {
		if rs.BudgetID != "" && !slices.Contains(ids, rs.BudgetID) {
			ids = append(ids, rs.BudgetID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	pks := make([]string, len(ids))
	for i, id := range ids {
		pks[i] = budgetPK(id)
	}
	items, err := st.batchGet(ctx, pks)
	if err != nil {
		return wrap("read", fmt.Sprintf("%d linked budgets", len(ids)), err)
	}
	byID := make(map[string]keys.BudgetRecord, len(items))
	for _, item := range items {
		_, id, _ := strings.Cut(ddb.String(item, attrPK), "#")
		byID[id] = decodeBudget(id, item)
	}
	for r, rs := range states {
		b, ok := byID[rs.BudgetID]
		if !ok {
			continue
		}
		s := keys.Settings{Budget: rs.Budget}
		b.ApplyTo(&s)
		rs.Budget = s.Budget
		states[r] = rs
	}
	return nil
}
