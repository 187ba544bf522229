package ddbspend

import (
	"context"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/spend"
)

func logKey(day, rid string) ddb.Item {
	return ddb.PKSK(LogPK(day, rid), rid)
}

// logItem is the log of e.
func (st *Store) logItem(e *spend.Event) ddb.Item {
	day := e.Day()
	it := ddb.Item{
		aPK:  ddb.S(LogPK(day, e.RequestID)),
		aSK:  ddb.S(e.RequestID),
		"v":  ddb.N(int64(e.Version)),
		"t0": ddb.N(e.Start.UnixMicro()),
		"t1": ddb.N(e.End.UnixMicro()),
		"st": ddb.S(string(e.Status)),
		aTTL: ddb.N(e.End.Add(st.o.LogRetention).Unix()),
	}
	for name, v := range map[string]string{
		"kh": e.KeyHash, "ka": e.KeyAlias, "tm": e.TeamID, "us": e.UserID, "eu": e.EndUser, "og": e.OrganizationID,
		"mg": e.ModelGroup, "dp": e.DeploymentID, "pv": e.Provider, "md": e.Model, "ab": e.APIBase, "ct": e.CallType,
	} {
		if v != "" {
			it[name] = ddb.S(v)
		}
	}
	for name, v := range map[string]int64{
		"pt": e.PromptTokens, "ot": e.CompletionTokens, "ht": e.CachedTokens,
		"na": int64(e.Attempts), "nr": int64(e.Retries), "nf": int64(e.Fallbacks), "sc": int64(e.StatusCode),
	} {
		if v != 0 {
			it[name] = ddb.N(v)
		}
	}
	if e.CostKnown {
		it["c"] = ddb.N(e.Cost)
	}
	if e.UsageEstimated {
		it["ue"] = ddb.Bool(true)
	}
	if e.Stream {
		it["sm"] = ddb.Bool(true)
	}
	if len(e.Tags) > 0 {
		it["tg"] = ddb.List(e.Tags)
	}
	return it
}

// decodeLog reads a log item.
func decodeLog(it ddb.Item) spend.Event {
	e := spend.Event{
		Version:   int(ddb.Int0(it, "v")),
		RequestID: ddb.String(it, aSK),
		Start:     time.UnixMicro(ddb.Int0(it, "t0")).UTC(),
		End:       time.UnixMicro(ddb.Int0(it, "t1")).UTC(),
		Status:    spend.Status(ddb.String(it, "st")),
		KeyHash:   ddb.String(it, "kh"), KeyAlias: ddb.String(it, "ka"), TeamID: ddb.String(it, "tm"), UserID: ddb.String(it, "us"),
		EndUser: ddb.String(it, "eu"), OrganizationID: ddb.String(it, "og"), ModelGroup: ddb.String(it, "mg"), DeploymentID: ddb.String(it, "dp"), Provider: ddb.String(it, "pv"),
		Model: ddb.String(it, "md"), APIBase: ddb.String(it, "ab"), CallType: ddb.String(it, "ct"),
		PromptTokens: ddb.Int0(it, "pt"), CompletionTokens: ddb.Int0(it, "ot"), CachedTokens: ddb.Int0(it, "ht"),
		Attempts: int(ddb.Int0(it, "na")), Retries: int(ddb.Int0(it, "nr")), Fallbacks: int(ddb.Int0(it, "nf")),
		StatusCode: int(ddb.Int0(it, "sc")),
	}
	if _, ok := it["c"]; ok {
		e.Cost, e.CostKnown = ddb.Int0(it, "c"), true
	}
	e.UsageEstimated = ddb.BoolOf(it, "ue")
	e.Stream = ddb.BoolOf(it, "sm")
	e.Tags = ddb.Strings(it, "tg")
	return e
}

// Logs implements spend.Store.
func (st *Store) Logs(ctx context.Context, q spend.LogQuery) ([]spend.Event, error) {
	p, err := st.LogPage(ctx, q)
	return p.Logs, err
}

// LogPage implements spend.Store: it reads every log q selects (the
// partitions of its days), so that the total is exact and pages never
// overlap; a page costs the whole range's read (admin traffic is rare).
func (st *Store) LogPage(ctx context.Context, q spend.LogQuery) (spend.LogPage, error) {
	var out []spend.Event
	if q.RequestID != "" {
		from, to := q.From, q.To
		if from.IsZero() && to.IsZero() {
			to = st.o.Now()
			from = to.Add(-st.o.LogRetention)
		} else {
			from, to = q.Window(st.o.Now())
		}
		days, err := spend.Days(from, to, st.o.Now())
		if err != nil {
			return spend.LogPage{}, err
		}
		ks := make([]ddb.Item, len(days))
		for i, d := range days {
			ks[i] = logKey(d, q.RequestID)
		}
		items, err := st.batchGet(ctx, ks, "")
		if err != nil {
			return spend.LogPage{}, err
		}
		for _, it := range items {
			if e := decodeLog(it); q.Match(&e) {
				out = append(out, e)
			}
		}
		return spend.PageLogs(out, q), nil
	}
	from, to := q.Window(st.o.Now())
	days, err := spend.Days(from, to.Add(-time.Nanosecond), st.o.Now())
	if err != nil {
		return spend.LogPage{}, err
	}
	var pks []string
	for _, d := range days {
		for sh := range Shards {
			pks = append(pks, "log#"+d+"#"+strconv.Itoa(sh))
		}
	}
	filter := map[string]string{"kh": q.KeyHash, "us": q.UserID, "tm": q.TeamID, "eu": q.EndUser, "og": q.OrgID}
	items, err := st.queryAll(ctx, pks, "", filter)
	if err != nil {
		return spend.LogPage{}, err
	}
	for _, it := range items {
		e := decodeLog(it)
		if q.Match(&e) && !e.End.Before(from) && e.End.Before(to) {
			out = append(out, e)
		}
	}
	return spend.PageLogs(out, q), nil
}
