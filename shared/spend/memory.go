package spend

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// Memory is the in-process Store of local mode and tests. Its exactly-once
// holds because one mutex covers the duplicate check, the keys store's
// ApplySpend and the writes of logs and rows.
type Memory struct {
	keys keys.Spender
	now  func() time.Time

	mu    sync.Mutex
	logs  map[string]Event // by request id, at most maxLogs
	order []string         // request ids of logs, oldest at next once full
	next  int
	rows  Rows       // every daily and end-user row
	holds HoldLedger // nil: holds are not settled here (SettleHolds)
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store that adds spend to the records of ks
// (keys.Memory in local mode).
func NewMemory(ks keys.Spender) *Memory {
	return &Memory{keys: ks, now: time.Now, logs: map[string]Event{}}
}

// Record implements Store.
func (m *Memory) Record(ctx context.Context, evs []Event) (Result, error) {
	for i := range evs {
		if err := evs[i].Validate(); err != nil {
			return Result{}, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var res Result
	fresh := make([]*Event, 0, len(evs))
	seen := make(map[string]bool, len(evs))
	var deltas []keys.SpendDelta
	for i := range evs {
		e := &evs[i]
		if _, ok := m.logs[e.RequestID]; ok || seen[e.RequestID] {
			res.Duplicates++
			continue
		}
		seen[e.RequestID] = true
		fresh = append(fresh, e)
		deltas = append(deltas, e.Deltas()...)
	}
	if len(deltas) > 0 {
		crossed, err := m.keys.ApplySpend(ctx, deltas)
		if err != nil {
			return Result{}, err
		}
		res.SoftCrossed = crossed
	}
	for _, e := range fresh {
		c := *e
		if len(e.Tags) > 0 {
			c.Tags = slices.Clone(e.Tags)
		}
		m.keepLog(c)
		m.settle(e)
		m.rows.Add(e)
		res.Recorded++
	}
	return res, nil
}

// MemoryLogs is the number of spend logs the memory store keeps, the
// latest ones: local mode runs for days, and a log is about half a
// kilobyte. Totals and daily rows are kept whole; a duplicate is recognised
// while its log is kept.
const MemoryLogs = 10_000

// keepLog stores a log, dropping the oldest past MemoryLogs.
func (m *Memory) keepLog(e Event) {
	if len(m.order) < MemoryLogs {
		m.order = append(m.order, e.RequestID)
	} else {
		delete(m.logs, m.order[m.next])
		m.order[m.next] = e.RequestID
		m.next = (m.next + 1) % MemoryLogs
	}
	m.logs[e.RequestID] = e
}

// Logs implements Store.
func (m *Memory) Logs(ctx context.Context, q LogQuery) ([]Event, error) {
	p, err := m.LogPage(ctx, q)
	return p.Logs, err
}

// LogPage implements Store.
func (m *Memory) LogPage(_ context.Context, q LogQuery) (LogPage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Event
	if q.RequestID != "" && q.From.IsZero() && q.To.IsZero() {
		if e, ok := m.logs[q.RequestID]; ok && q.Match(&e) {
			out = append(out, e)
		}
		return PageLogs(out, q), nil
	}
	from, to := q.Window(m.now())
	for _, e := range m.logs {
		if q.Match(&e) && !e.End.Before(from) && e.End.Before(to) {
			e.Tags = slices.Clone(e.Tags)
			out = append(out, e)
		}
	}
	return PageLogs(out, q), nil
}

// Daily implements Store.
func (m *Memory) Daily(_ context.Context, q DailyQuery) ([]DailyRow, error) {
	days, err := Days(q.From, q.To, m.now())
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []DailyRow
	for _, r := range m.rows.Daily {
		if inDays(days, r.Day) && q.Match(r) {
			out = append(out, *r)
		}
	}
	SortRows(out)
	return out, nil
}

// Totals implements Store.
func (m *Memory) Totals(ctx context.Context, q TotalsQuery) ([]Total, error) {
	days, err := Days(q.From, q.To, m.now())
	if err != nil {
		return nil, err
	}
	if q.By != ByEndUser {
		rows, err := m.Daily(ctx, DailyQuery{From: q.From, To: q.To})
		if err != nil {
			return nil, err
		}
		return GroupTotals(q.By, rows, nil)
	}
	m.mu.Lock()
	var eus []EndUserRow
	for _, r := range m.rows.EndUsers {
		if inDays(days, r.Day) {
			eus = append(eus, *r)
		}
	}
	m.mu.Unlock()
	return GroupTotals(q.By, nil, eus)
}

func inDays(days []string, d string) bool {
	return len(days) > 0 && d >= days[0] && d <= days[len(days)-1]
}
