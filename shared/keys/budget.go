package keys

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Budget is the spend state and the budget of a record that carries spend:
// a key, a team, a user, a team member or an end user.
//
// Spend counts every nano-dollar ever recorded. With a Duration, the budget
// applies to the spend of the current period only: PeriodSpend is the spend
// of the period starting at PeriodStart, and a record whose PeriodStart is
// not the current period's start has spent nothing in this period. No job
// resets anything: the first spend or read after a boundary sees the new
// period, exactly at the boundary.
//
// Money is exact where it is added up: spend arrives as integer nano-USD
// (SpendDelta) and the stores add it as integers (memory) or as exact
// decimals (DynamoDB numbers). The float64 fields are for reading.
type Budget struct {
	MaxBudget  *float64 // USD; nil: unlimited
	SoftBudget *float64 // USD; crossing it is logged once per period, never blocks
	Duration   string   // budget_duration: "30s", "30m", "30h", "1d", "7d", "30d", "1mo"; "": no reset
	// Anchor is when Duration was set, where LiteLLM's chain of resets
	// starts (anchor.go); zero: the Unix epoch.
	Anchor time.Time

	Spend       float64   // lifetime USD, changed only by ApplySpend
	PeriodStart time.Time // start of the period PeriodSpend belongs to; zero: none yet
	PeriodSpend float64   // USD spent in the period starting at PeriodStart
	// SoftAlerted is the start of the period whose soft budget crossing was
	// logged (the zero period, time.Unix(0,0), when there is no Duration);
	// zero: not crossed.
	SoftAlerted time.Time
}

// Current returns the spend that counts against MaxBudget at now.
func (b Budget) Current(now time.Time) float64 {
	if b.Duration == "" {
		return b.Spend
	}
	if !b.PeriodAt(now).Equal(b.PeriodStart) {
		return 0
	}
	return b.PeriodSpend
}

// Exceeded reports whether the budget is spent at now: spend has reached
// MaxBudget (LiteLLM blocks at spend >= max_budget).
func (b Budget) Exceeded(now time.Time) bool {
	return b.MaxBudget != nil && b.Current(now) >= *b.MaxBudget
}

// ResetAt returns when the current period ends (zero without a Duration):
// budget_reset_at.
func (b Budget) ResetAt(now time.Time) time.Time {
	_, end := b.span(now)
	return end
}

// ValidBudget checks the budget settings; its error wraps ErrInvalid.
func (b Budget) validate(what string) error {
	for _, v := range []struct {
		name string
		v    *float64
	}{{"max_budget", b.MaxBudget}, {"soft_budget", b.SoftBudget}} {
		if v.v != nil && (*v.v < 0 || math.IsNaN(*v.v) || math.IsInf(*v.v, 0)) {
			return fmt.Errorf("%s: %w: %s %v", what, ErrInvalid, v.name, *v.v)
		}
	}
	if b.Duration != "" {
		if _, err := ParsePeriod(b.Duration); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// Period is a parsed budget_duration.
type Period struct {
	n    int64
	unit byte // 's', 'm', 'h', 'd', 'M' (month)
}

// ParsePeriod parses a budget_duration as LiteLLM writes it: a positive
// whole number and a unit, "s", "m", "h", "d", "w" (weeks: 7 days each, as
// LiteLLM counts them: 1w resets on Monday like 7d) or "mo". Its error
// wraps ErrInvalid.
func ParsePeriod(s string) (Period, error) {
	bad := func() (Period, error) {
		return Period{}, fmt.Errorf("budget_duration %q: %w: want a number and s, m, h, d, w or mo, such as 30s, 30m, 30h, 1d, 7d, 2w, 30d, 1mo", s, ErrInvalid)
	}
	num, unit := s, byte(0)
	switch {
	case strings.HasSuffix(s, "mo"):
		num, unit = s[:len(s)-2], 'M'
	case len(s) > 1 && strings.ContainsRune("smhdw", rune(s[len(s)-1])):
		num, unit = s[:len(s)-1], s[len(s)-1]
	default:
		return bad()
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > 100_000 {
		return bad()
	}
	if unit == 'w' {
		if n > 100_000/7 {
			return bad()
		}
		n, unit = n*7, 'd'
	}
	return Period{n: n, unit: unit}, nil
}

// Start returns the start of the period containing t, at the calendar
// boundaries LiteLLM uses: days at midnight UTC, 7d on Monday, 30d and any
// number of months on the 1st of the month; seconds, minutes, hours and
// other day counts on multiples of the period since the Unix epoch.
func (p Period) Start(t time.Time) time.Time {
	t = t.UTC()
	switch {
	case p.unit == 'M' || (p.unit == 'd' && p.n == 30):
		months := p.n
		if p.unit == 'd' {
			months = 1
		}
		m := int64(t.Year())*12 + int64(t.Month()) - 1
		m -= m % months
		return time.Date(int(m/12), time.Month(m%12+1), 1, 0, 0, 0, 0, time.UTC)
	case p.unit == 'd' && p.n == 7:
		day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		return day.AddDate(0, 0, -back)
	case p.unit == 'd' && p.n == 1:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	d := p.length()
	return time.Unix(0, 0).UTC().Add(t.Sub(time.Unix(0, 0)) / d * d)
}

// Next returns the start of the period after the one containing t.
func (p Period) Next(t time.Time) time.Time {
	s := p.Start(t)
	switch {
	case p.unit == 'M' || (p.unit == 'd' && p.n == 30):
		months := int(p.n)
		if p.unit == 'd' {
			months = 1
		}
		return s.AddDate(0, months, 0)
	case p.unit == 'd' && (p.n == 7 || p.n == 1):
		return s.AddDate(0, 0, int(p.n))
	}
	return s.Add(p.length())
}

func (p Period) length() time.Duration {
	switch p.unit {
	case 's':
		return time.Duration(p.n) * time.Second
	case 'm':
		return time.Duration(p.n) * time.Minute
	case 'h':
		return time.Duration(p.n) * time.Hour
	}
	return time.Duration(p.n) * 24 * time.Hour
}

// PeriodStart returns the start of the budget period of duration containing
// t; the zero time when duration is "" or invalid.
func PeriodStart(duration string, t time.Time) time.Time {
	if duration == "" {
		return time.Time{}
	}
	p, err := ParsePeriod(duration)
	if err != nil {
		return time.Time{}
	}
	return p.Start(t)
}

// NanosPerUSD is the unit of money in the spend pipeline: nano-dollars.
const NanosPerUSD = 1_000_000_000

// USD returns nanos as dollars.
func USD(nanos int64) float64 { return float64(nanos) / NanosPerUSD }

// Nanos returns usd as nano-dollars, rounded, saturated at the ends of
// int64 (about 9.2e9 USD) and 0 for NaN: a budget beyond the range is
// practically unlimited, where a wrapped conversion would be negative and
// refuse every hold on it.
func Nanos(usd float64) int64 {
	n := math.Round(usd * NanosPerUSD)
	switch {
	case math.IsNaN(n):
		return 0
	case n >= math.MaxInt64: // float64(math.MaxInt64) is 2^63, one past it
		return math.MaxInt64
	case n <= math.MinInt64:
		return math.MinInt64
	}
	return int64(n)
}

// DecimalUSD formats nanos as an exact decimal number of dollars
// ("0.000001234"), the form DynamoDB adds exactly.
func DecimalUSD(nanos int64) string {
	neg := nanos < 0
	u := uint64(nanos)
	if neg {
		u = uint64(-nanos)
	}
	s := fmt.Sprintf("%d.%09d", u/NanosPerUSD, u%NanosPerUSD)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if neg {
		s = "-" + s
	}
	return s
}

// ParseDecimalUSD parses an exact decimal number of dollars (as DynamoDB
// returns a number) into nano-dollars. Digits below a nano-dollar are an
// error: the spend pipeline never writes them.
func ParseDecimalUSD(s string) (int64, error) {
	orig := s
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" {
		whole = "0"
	}
	frac = strings.TrimRight(frac, "0")
	if len(frac) > 9 {
		return 0, fmt.Errorf("amount %q: %w: finer than a nano-dollar", orig, ErrInvalid)
	}
	frac += strings.Repeat("0", 9-len(frac))
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || w > math.MaxInt64/NanosPerUSD-1 {
		return 0, fmt.Errorf("amount %q: %w", orig, ErrInvalid)
	}
	n := w*NanosPerUSD + f
	if neg {
		n = -n
	}
	return n, nil
}
