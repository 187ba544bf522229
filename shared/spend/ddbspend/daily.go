package ddbspend

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/spend"
)

var counterAttrs = []string{"pt", "ot", "ht", "c", "rq", "ok", "fl"}

func counterValues(c spend.Counters) []int64 {
	return []int64{c.PromptTokens, c.CompletionTokens, c.CachedTokens, c.Spend, c.Requests, c.Successes, c.Failures}
}

func decodeCounters(it ddb.Item) spend.Counters {
	return spend.Counters{
		PromptTokens: ddb.Int0(it, "pt"), CompletionTokens: ddb.Int0(it, "ot"), CachedTokens: ddb.Int0(it, "ht"),
		Spend: ddb.Int0(it, "c"), Requests: ddb.Int0(it, "rq"), Successes: ddb.Int0(it, "ok"), Failures: ddb.Int0(it, "fl"),
	}
}

// counterUpdate ADDs c and SETs set on the item at pk, sk.
func (st *Store) counterUpdate(pk, sk string, c spend.Counters, set map[string]string) types.TransactWriteItem {
	names := map[string]string{}
	values := ddb.Item{}
	var add, sets []string
	for i, v := range counterValues(c) {
		if v == 0 {
			continue
		}
		a := counterAttrs[i]
		names["#"+a] = a
		values[":"+a] = ddb.N(v)
		add = append(add, "#"+a+" :"+a)
	}
	for a, v := range set {
		names["#"+a] = a
		values[":"+a] = ddb.S(v)
		sets = append(sets, "#"+a+" = :"+a)
	}
	slices.Sort(sets)
	expr := "ADD " + strings.Join(add, ", ")
	if len(sets) > 0 {
		expr += " SET " + strings.Join(sets, ", ")
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(st.table),
		Key:                       ddb.PKSK(pk, sk),
		UpdateExpression:          aws.String(expr),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

func (st *Store) rowUpdate(r *spend.DailyRow) types.TransactWriteItem {
	return st.counterUpdate(dayPK(r.Day), keyRowSK(r.KeyHash, r.Provider, r.ModelGroup), r.Counters,
		map[string]string{"kh": r.KeyHash, "tm": r.TeamID, "us": r.UserID, "og": r.OrgID, "mg": r.ModelGroup, "pv": r.Provider})
}

func (st *Store) endUserUpdate(r *spend.EndUserRow) types.TransactWriteItem {
	return st.counterUpdate(dayPK(r.Day), endUserSK(r.EndUser), r.Counters, map[string]string{"eu": r.EndUser})
}

// Daily implements spend.Store.
func (st *Store) Daily(ctx context.Context, q spend.DailyQuery) ([]spend.DailyRow, error) {
	pks, err := st.dayPartitions(q.From, q.To)
	if err != nil {
		return nil, err
	}
	prefix := "k#"
	if q.KeyHash != "" {
		prefix = "k#" + q.KeyHash + "#"
	}
	items, err := st.queryAll(ctx, pks, prefix, map[string]string{"tm": q.TeamID, "us": q.UserID, "og": q.OrgID, "mg": q.ModelGroup, "pv": q.Provider})
	if err != nil {
		return nil, err
	}
	out := make([]spend.DailyRow, 0, len(items))
	for _, it := range items {
		r := spend.DailyRow{
			Day: strings.TrimPrefix(ddb.String(it, aPK), "day#"), KeyHash: ddb.String(it, "kh"), TeamID: ddb.String(it, "tm"), UserID: ddb.String(it, "us"),
			OrgID: ddb.String(it, "og"), ModelGroup: ddb.String(it, "mg"), Provider: ddb.String(it, "pv"), Counters: decodeCounters(it),
		}
		if q.Match(&r) {
			out = append(out, r)
		}
	}
	spend.SortRows(out)
	return out, nil
}

// Totals implements spend.Store.
func (st *Store) Totals(ctx context.Context, q spend.TotalsQuery) ([]spend.Total, error) {
	if q.By != spend.ByEndUser {
		rows, err := st.Daily(ctx, spend.DailyQuery{From: q.From, To: q.To})
		if err != nil {
			return nil, err
		}
		return spend.GroupTotals(q.By, rows, nil)
	}
	pks, err := st.dayPartitions(q.From, q.To)
	if err != nil {
		return nil, err
	}
	items, err := st.queryAll(ctx, pks, "e#", nil)
	if err != nil {
		return nil, err
	}
	eus := make([]spend.EndUserRow, 0, len(items))
	for _, it := range items {
		eus = append(eus, spend.EndUserRow{Day: strings.TrimPrefix(ddb.String(it, aPK), "day#"), EndUser: ddb.String(it, "eu"), Counters: decodeCounters(it)})
	}
	return spend.GroupTotals(q.By, nil, eus)
}

// dayPartitions returns the partitions of the daily rows of the days from
// from to to (spend.Days).
func (st *Store) dayPartitions(from, to time.Time) ([]string, error) {
	days, err := spend.Days(from, to, st.o.Now())
	if err != nil {
		return nil, err
	}
	pks := make([]string, len(days))
	for i, d := range days {
		pks[i] = dayPK(d)
	}
	return pks, nil
}
