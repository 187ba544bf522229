package keys_test

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// TestSpanLiteLLM: a budget's periods are those of LiteLLM's chain of
// resets (get_budget_reset_time at the moment budget_duration was set,
// then at each reset), checked against instants its function gives.
func TestSpanLiteLLM(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct{ dur, anchor, t, start, end string }{
		// another number of days: from the anchor day's midnight
		{"10d", "2026-03-05T13:00:00Z", "2026-03-05T14:00:00Z", "2026-03-05T00:00:00Z", "2026-03-15T00:00:00Z"},
		{"10d", "2026-03-05T13:00:00Z", "2026-03-20T09:00:00Z", "2026-03-15T00:00:00Z", "2026-03-25T00:00:00Z"},
		{"2w", "2026-03-04T08:00:00Z", "2026-03-19T00:00:00Z", "2026-03-18T00:00:00Z", "2026-04-01T00:00:00Z"},
		// calendar periods do not depend on it
		{"1d", "2026-03-05T13:00:00Z", "2026-03-06T01:00:00Z", "2026-03-06T00:00:00Z", "2026-03-07T00:00:00Z"},
		{"7d", "2026-03-05T13:00:00Z", "2026-03-05T14:00:00Z", "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"},
		{"30d", "2026-03-05T13:00:00Z", "2026-03-05T14:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"},
		{"1mo", "2026-03-05T13:00:00Z", "2026-12-31T23:00:00Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		// hours: 5h from 00:30 resets at 05:00, then 10, 15, 20, and 01:00
		// the next day (20 + 5 = 25, past midnight), 05:00...
		{"5h", "2026-03-05T00:30:00Z", "2026-03-05T01:30:00Z", "2026-03-05T00:30:00Z", "2026-03-05T05:00:00Z"},
		{"5h", "2026-03-05T00:30:00Z", "2026-03-05T05:00:00Z", "2026-03-05T05:00:00Z", "2026-03-05T10:00:00Z"},
		{"5h", "2026-03-05T00:30:00Z", "2026-03-05T23:30:00Z", "2026-03-05T20:00:00Z", "2026-03-06T01:00:00Z"},
		{"5h", "2026-03-05T00:30:00Z", "2026-03-06T03:00:00Z", "2026-03-06T01:00:00Z", "2026-03-06T05:00:00Z"},
		{"6h", "2026-03-05T00:30:00Z", "2026-03-05T01:30:00Z", "2026-03-05T00:00:00Z", "2026-03-05T06:00:00Z"},
		// 30h: LiteLLM's next reset is the next day at 06:00, every day
		{"30h", "2026-03-05T03:00:00Z", "2026-03-05T07:00:00Z", "2026-03-05T03:00:00Z", "2026-03-06T06:00:00Z"},
		{"30h", "2026-03-05T03:00:00Z", "2026-03-07T05:00:00Z", "2026-03-06T06:00:00Z", "2026-03-07T06:00:00Z"},
		// minutes: 7m from 10:58:30 resets at 11:03 (58 + 7 - 2), 11:07, ...
		{"7m", "2026-03-05T10:58:30Z", "2026-03-05T11:00:00Z", "2026-03-05T10:58:30Z", "2026-03-05T11:03:00Z"},
		{"7m", "2026-03-05T10:58:30Z", "2026-03-05T11:05:00Z", "2026-03-05T11:03:00Z", "2026-03-05T11:07:00Z"},
		{"7m", "2026-03-05T10:58:30Z", "2026-03-05T11:57:00Z", "2026-03-05T11:56:00Z", "2026-03-05T12:03:00Z"},
		{"7m", "2026-03-05T10:58:30Z", "2026-03-05T23:59:00Z", "2026-03-05T23:56:00Z", "2026-03-06T00:03:00Z"},
		// seconds: 45s resets at :30 and :45 of each minute
		{"45s", "2026-03-05T10:00:50Z", "2026-03-05T10:01:00Z", "2026-03-05T10:00:50Z", "2026-03-05T10:01:30Z"},
		{"45s", "2026-03-05T10:00:50Z", "2026-03-05T10:02:40Z", "2026-03-05T10:02:30Z", "2026-03-05T10:02:45Z"},
	} {
		b := keys.Budget{Duration: tc.dur, Anchor: at(tc.anchor)}
		if got, end := b.PeriodAt(at(tc.t)), b.ResetAt(at(tc.t)); !got.Equal(at(tc.start)) || !end.Equal(at(tc.end)) {
			t.Errorf("%s set at %s, at %s: %v..%v, want %s..%s", tc.dur, tc.anchor, tc.t, got, end, tc.start, tc.end)
		}
	}
}

// TestSpanChains: for any duration, each period ends where the next
// starts and holds the instants it is asked for.
func TestSpanChains(t *testing.T) {
	anchor := time.Date(2026, 3, 5, 10, 58, 31, 0, time.UTC)
	for _, dur := range []string{"45s", "90s", "7m", "45m", "90m", "5h", "7h", "30h", "48h", "3d", "10d", "2w", "1d", "7d", "30d", "2mo"} {
		b := keys.Budget{Duration: dur, Anchor: anchor}
		step := time.Duration(7919) * time.Second
		if dur[len(dur)-1] == 's' || dur[len(dur)-1] == 'm' {
			step = 13 * time.Second
		}
		for at := anchor; at.Before(anchor.Add(2000 * step)); at = at.Add(step) {
			start, end := b.PeriodAt(at), b.ResetAt(at)
			if at.Before(start) || !at.Before(end) || !b.PeriodAt(end).Equal(end) {
				t.Fatalf("%s at %v: %v..%v, the next starts %v", dur, at, start, end, b.PeriodAt(end))
			}
		}
	}
}
