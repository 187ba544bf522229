package keys

import "time"

// LiteLLM computes a record's budget_reset_at when its budget_duration is
// set (key, team, user, end user, organization or member creation, or an
// update naming budget_duration) and again at each reset, as the next
// standardized reset time after that moment (get_budget_reset_time):
// calendar boundaries for 1d, 7d and 30d (and months), the next multiple
// for seconds, minutes and hours, and, for another number of days, that
// number of days from the day's midnight. Budget.Anchor is that moment,
// so the periods of a budget follow the same chain of resets, exactly at
// each boundary (LiteLLM's job runs every ten minutes or so).

// Span returns the budget period containing t, for a budget_duration set
// at anchor (zero: the Unix epoch), as LiteLLM's resets chain from it:
//   - 1d, 7d, 30d and months: the calendar period (Start, Next);
//   - other numbers of days: N days at a time from the anchor day's
//     midnight UTC;
//   - seconds, minutes and hours that divide a minute, an hour or a day:
//     multiples since midnight;
//   - other seconds (under a minute), minutes (under an hour) and hours:
//     LiteLLM's aligned next reset from the anchor (the first period runs
//     from the anchor to it), then from each reset;
//   - seconds or minutes of a minute or an hour and more that do not
//     divide them: that length at a time from the anchor.
func (p Period) Span(anchor, t time.Time) (start, end time.Time) {
	t = t.UTC()
	if anchor.IsZero() {
		anchor = time.Unix(0, 0)
	}
	anchor = anchor.UTC()
	d := p.length()
	switch {
	case p.unit == 'M' || (p.unit == 'd' && (p.n == 1 || p.n == 7 || p.n == 30)):
		return p.Start(t), p.Next(t)
	case p.unit == 'd':
		return steps(midnight(anchor), d, t)
	case p.unit == 'h' && 24%p.n == 0, p.unit != 'h' && 60%p.n == 0:
		return p.Start(t), p.Next(t)
	case p.unit == 'h' || p.n < 60:
		if r := p.liteNext(anchor); !t.Before(anchor) && t.Before(r) {
			return anchor, r
		}
		// Every reset LiteLLM computes is on the same chain of instants
		// (a reset's next reset is the next instant of the chain), and the
		// first after any time is at most min(d, 48h) later.
		x := p.liteNext(t.Add(-min(d, 48*time.Hour)))
		for {
			n := p.liteNext(x)
			if n.After(t) {
				return x, n
			}
			x = n
		}
	}
	return steps(anchor, d, t)
}

// steps returns the period of length d containing t among those starting
// at base + k*d.
func steps(base time.Time, d time.Duration, t time.Time) (time.Time, time.Time) {
	off := t.Sub(base)
	k := off / d
	if off < 0 && off%d != 0 {
		k--
	}
	start := base.Add(k * d)
	return start, start.Add(d)
}

func midnight(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// liteNext is LiteLLM's next reset after t for seconds, minutes and hours
// (get_next_standardized_reset_time in UTC): the next multiple of the
// period within the minute, hour or day, carried into the next unit, a
// carry past midnight landing on the next day.
func (p Period) liteNext(t time.Time) time.Time {
	day := midnight(t)
	h, m, s := t.Clock()
	n := int(p.n)
	switch p.unit {
	case 'h':
		h, m, s = h+n-h%n, 0, 0
	case 'm':
		m += n - m%n
		h, m, s = h+m/60, m%60, 0
	case 's':
		s += n - s%n
		m += s / 60
		h, m, s = h+m/60, m%60, s%60
	}
	if h >= 24 {
		day, h = day.AddDate(0, 0, 1), h%24
	}
	return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
}

// span is the budget's period containing t; zeros without a valid Duration.
func (b Budget) span(t time.Time) (start, end time.Time) {
	if b.Duration == "" {
		return time.Time{}, time.Time{}
	}
	p, err := ParsePeriod(b.Duration)
	if err != nil {
		return time.Time{}, time.Time{}
	}
	return p.Span(b.Anchor, t)
}

// PeriodAt returns the start of the budget's period containing t (zero
// without a Duration): what spend at t is counted in.
func (b Budget) PeriodAt(t time.Time) time.Time {
	s, _ := b.span(t)
	return s
}
