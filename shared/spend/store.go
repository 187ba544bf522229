package spend

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// Store records spend events exactly once and answers the admin API's
// spend reports. Implementations are safe for concurrent use.
type Store interface {
	// Record records each event once, however often it is given (in one
	// call, across calls, by concurrent callers): its spend log, keyed by
	// request id, and its share of every total it touches (the spend of its
	// key, team, user, team member and end user records in the keys store,
	// and its daily rows), all or nothing per event. Events already
	// recorded are counted as duplicates and change nothing. On an error
	// some events may be recorded and others not; calling again with the
	// same events is always safe. Events must be valid (Validate).
	Record(ctx context.Context, evs []Event) (Result, error)

	// Logs returns the spend logs q selects, newest end first (ties by
	// request id): at most q.Limit of them, from the q.Offset-th on.
	Logs(ctx context.Context, q LogQuery) ([]Event, error)
	// LogPage is Logs with how many logs q selects in all (every page of
	// q's filters and range).
	LogPage(ctx context.Context, q LogQuery) (LogPage, error)
	// Daily returns the daily rows per (day, key, model group, provider)
	// q selects, by day, key, model group and provider.
	Daily(ctx context.Context, q DailyQuery) ([]DailyRow, error)
	// Totals adds up the daily rows of q's days by q.By, largest spend first.
	Totals(ctx context.Context, q TotalsQuery) ([]Total, error)
}

// Result is what one Record call did.
type Result struct {
	Recorded    int        // events recorded now
	Duplicates  int        // events that were recorded already (or twice in the call)
	SoftCrossed []keys.Ref // records whose soft budget this spend crossed (marked, once per period)
}

// LogQuery selects spend logs; empty fields match everything.
type LogQuery struct {
	RequestID string
	KeyHash   string
	UserID    string
	TeamID    string
	EndUser   string
	// Model matches an event's model group or its model, Status "success"
	// (succeeded) or "failure" (anything else): LiteLLM's /spend/logs/ui
	// model and status_filter.
	Model  string
	Status string
	OrgID  string // organization_id
	// From and To bound the events' end time (From inclusive, To
	// exclusive); zero To is now, zero From is To minus DefaultLogWindow
	// (a RequestID is looked up over the whole log retention instead).
	From, To time.Time
	Limit    int // 0: DefaultLogLimit
	Offset   int // the logs to skip in the order (paging); negative: 0
}

// LogPage is a page of the logs a LogQuery selects.
type LogPage struct {
	Logs  []Event // the page, newest end first
	Total int     // the logs the query selects on every page
}

// Log query defaults.
const (
	DefaultLogWindow = 7 * 24 * time.Hour
	DefaultLogLimit  = 1000
	// MaxDays bounds the days one query may span.
	MaxDays = 400
)

// Match reports whether e passes q's filters (not its time range).
func (q LogQuery) Match(e *Event) bool {
	if q.Model != "" && q.Model != e.ModelGroup && q.Model != e.Model {
		return false
	}
	if (q.Status == string(StatusSuccess) && !e.Success()) || (q.Status == string(StatusFailure) && e.Success()) {
		return false
	}
	return matches(q.RequestID, e.RequestID, q.KeyHash, e.KeyHash, q.UserID, e.UserID, q.TeamID, e.TeamID, q.EndUser, e.EndUser, q.OrgID, e.OrganizationID)
}

// matches reports whether every (filter, value) pair passes: an empty
// filter matches everything, another only its own value.
func matches(pairs ...string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" && pairs[i] != pairs[i+1] {
			return false
		}
	}
	return true
}

// Window returns the end-time range of q at now.
func (q LogQuery) Window(now time.Time) (from, to time.Time) {
	from, to = q.From, q.To
	if to.IsZero() {
		to = now.Add(time.Second)
	}
	if from.IsZero() {
		from = to.Add(-DefaultLogWindow)
	}
	return from, to
}

// DailyRow is the spend of one key on one model group and provider in one
// UTC day. TeamID, UserID and OrgID are the key's team, user and
// organization as its events last named them. Spend is nano-USD.
type DailyRow struct {
	Day        string // 2006-01-02
	KeyHash    string // "" for the master key or an open gateway
	TeamID     string
	UserID     string
	OrgID      string
	ModelGroup string
	Provider   string
	Counters
}

// Counters are what a daily row or a total adds up.
type Counters struct {
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
	Spend            int64 // nano-USD
	Requests         int64
	Successes        int64
	Failures         int64 // failures and client disconnects
}

// Add adds e to c.
func (c *Counters) Add(e *Event) {
	c.PromptTokens += e.PromptTokens
	c.CompletionTokens += e.CompletionTokens
	c.CachedTokens += e.CachedTokens
	c.Spend += e.Nanos()
	c.Requests++
	if e.Success() {
		c.Successes++
	} else {
		c.Failures++
	}
}

// Plus returns c + o.
func (c Counters) Plus(o Counters) Counters {
	return Counters{
		PromptTokens: c.PromptTokens + o.PromptTokens, CompletionTokens: c.CompletionTokens + o.CompletionTokens,
		CachedTokens: c.CachedTokens + o.CachedTokens, Spend: c.Spend + o.Spend,
		Requests: c.Requests + o.Requests, Successes: c.Successes + o.Successes, Failures: c.Failures + o.Failures,
	}
}

// DailyQuery selects daily rows; empty filters match everything.
type DailyQuery struct {
	// From and To are days, inclusive: their UTC dates count. Zero To is
	// today; zero From is To.
	From, To   time.Time
	KeyHash    string
	TeamID     string
	UserID     string
	OrgID      string
	ModelGroup string
	Provider   string
}

// Match reports whether r passes q's filters (not its days).
func (q DailyQuery) Match(r *DailyRow) bool {
	return matches(q.KeyHash, r.KeyHash, q.TeamID, r.TeamID, q.UserID, r.UserID, q.OrgID, r.OrgID, q.ModelGroup, r.ModelGroup, q.Provider, r.Provider)
}

// GroupBy names what Totals groups by.
type GroupBy string

// Groupings.
const (
	ByKey        GroupBy = "key"
	ByTeam       GroupBy = "team"
	ByUser       GroupBy = "user"
	ByEndUser    GroupBy = "end_user" // LiteLLM's "customer"
	ByOrg        GroupBy = "organization"
	ByModelGroup GroupBy = "model_group"
	ByProvider   GroupBy = "provider"
	ByDay        GroupBy = "day"
)

// TotalsQuery asks for totals over days.
type TotalsQuery struct {
	From, To time.Time // days, inclusive, as in DailyQuery
	By       GroupBy
}

// Total is the counters of one group. ID is the key hash, team id, user id,
// end user id, organization id, model group, provider or day; "" gathers events that name
// none (the master key, no team, no end user).
type Total struct {
	ID string
	Counters
}

// EndUserRow is the spend of one end user in one UTC day: the rows Totals
// ByEndUser adds up.
type EndUserRow struct {
	Day     string
	EndUser string
	Counters
}

// Days returns the UTC dates from from to to, inclusive (zero to: today at
// now; zero from: to), or an error past MaxDays.
func Days(from, to, now time.Time) ([]string, error) {
	if to.IsZero() {
		to = now
	}
	if from.IsZero() {
		from = to
	}
	d0 := time.Date(from.UTC().Year(), from.UTC().Month(), from.UTC().Day(), 0, 0, 0, 0, time.UTC)
	d1 := time.Date(to.UTC().Year(), to.UTC().Month(), to.UTC().Day(), 0, 0, 0, 0, time.UTC)
	if d1.Before(d0) {
		return nil, fmt.Errorf("%w: end date %s before start date %s", ErrQuery, d1.Format(time.DateOnly), d0.Format(time.DateOnly))
	}
	n := int(d1.Sub(d0).Hours()/24) + 1
	if n > MaxDays {
		return nil, fmt.Errorf("%w: %d days; at most %d in one query", ErrQuery, n, MaxDays)
	}
	out := make([]string, 0, n)
	for d := d0; !d.After(d1); d = d.AddDate(0, 0, 1) {
		out = append(out, d.Format(time.DateOnly))
	}
	return out, nil
}

// ErrQuery is wrapped by the errors of a query the store cannot answer as
// asked (a bad range, an unknown grouping): an apierr.ErrInvalid.
var ErrQuery = apierr.Classed(apierr.ErrInvalid, "bad spend query")

// ErrUnavailable is wrapped by the errors of a store that could not
// answer: an apierr.ErrUnavailable.
var ErrUnavailable = apierr.Classed(apierr.ErrUnavailable, "spend store unavailable")

// groupKeys is what each grouping of daily rows (all but ByEndUser) groups
// by.
var groupKeys = map[GroupBy]func(r *DailyRow) string{
	ByKey:        func(r *DailyRow) string { return r.KeyHash },
	ByTeam:       func(r *DailyRow) string { return r.TeamID },
	ByUser:       func(r *DailyRow) string { return r.UserID },
	ByOrg:        func(r *DailyRow) string { return r.OrgID },
	ByModelGroup: func(r *DailyRow) string { return r.ModelGroup },
	ByProvider:   func(r *DailyRow) string { return r.Provider },
	ByDay:        func(r *DailyRow) string { return r.Day },
}

// GroupTotals adds up key rows (and, for ByEndUser, end user rows) by by.
func GroupTotals(by GroupBy, rows []DailyRow, endUsers []EndUserRow) ([]Total, error) {
	sums := map[string]Counters{}
	if by == ByEndUser {
		for _, r := range endUsers {
			sums[r.EndUser] = sums[r.EndUser].Plus(r.Counters)
		}
	} else {
		key := groupKeys[by]
		for i := range rows {
			if key == nil { // an unknown grouping; a report with no rows answers empty
				return nil, fmt.Errorf("%w: group by %q (key, team, user, end_user, organization, model_group, provider, day)", ErrQuery, by)
			}
			id := key(&rows[i])
			sums[id] = sums[id].Plus(rows[i].Counters)
		}
	}
	out := make([]Total, 0, len(sums))
	for id, c := range sums {
		out = append(out, Total{ID: id, Counters: c})
	}
	slices.SortFunc(out, func(a, b Total) int {
		if a.Spend != b.Spend {
			if a.Spend > b.Spend {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// SortRows orders daily rows by day, key, model group and provider.
func SortRows(rows []DailyRow) {
	slices.SortFunc(rows, func(a, b DailyRow) int {
		return cmpStrings(a.Day, b.Day, a.KeyHash, b.KeyHash, a.ModelGroup, b.ModelGroup, a.Provider, b.Provider)
	})
}

func cmpStrings(pairs ...string) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c := strings.Compare(pairs[i], pairs[i+1]); c != 0 {
			return c
		}
	}
	return 0
}

// PageLogs orders logs newest end first (then by request id: a total
// order, so that pages of the same logs never overlap) and cuts the page q
// names (Offset, Limit; 0 is DefaultLogLimit).
func PageLogs(logs []Event, q LogQuery) LogPage {
	slices.SortFunc(logs, func(a, b Event) int {
		if c := b.End.Compare(a.End); c != 0 {
			return c
		}
		return strings.Compare(a.RequestID, b.RequestID)
	})
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLogLimit
	}
	off := min(max(q.Offset, 0), len(logs))
	return LogPage{Logs: logs[off : off+min(limit, len(logs)-off)], Total: len(logs)}
}
