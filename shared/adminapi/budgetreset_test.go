package adminapi_test

import (
	"testing"
	"time"
)

// TestBudgetResetAtFromCreation: budget_reset_at is LiteLLM's
// get_budget_reset_time at the moment budget_duration was set: for a
// number of days other than 1, 7 and 30, that many days from the day's
// midnight; for hours that do not divide a day, the next multiple of the
// hour count within the day. Computed here from the record's created_at.
func TestBudgetResetAtFromCreation(t *testing.T) {
	const m = "sk-master-test"
	onStores(t, func(t *testing.T, c client) {
		for _, tc := range []struct {
			dur  string
			want func(created time.Time) time.Time
		}{
			{"10d", func(c time.Time) time.Time { return c.Truncate(24*time.Hour).AddDate(0, 0, 10) }},
			{"13d", func(c time.Time) time.Time { return c.Truncate(24*time.Hour).AddDate(0, 0, 13) }},
			{"5h", func(c time.Time) time.Time {
				h := c.Hour() + 5 - c.Hour()%5
				return c.Truncate(24 * time.Hour).Add(time.Duration(h%24)*time.Hour + time.Duration(h/24)*24*time.Hour)
			}},
		} {
			for _, rec := range []struct{ create, info, field string }{
				{"/key/generate", "/key/info?key=", "key"},
				{"/team/new", "/team/info?team_id=", "team_id"},
			} {
				id := c.must(m, "POST", rec.create, `{"budget_duration":"`+tc.dur+`","max_budget":1}`)[rec.field].(string)
				info := c.must(m, "GET", rec.info+id, "")
				if i, ok := info["info"].(map[string]any); ok && rec.field == "key" {
					info = i
				} else if ti, ok := info["team_info"].(map[string]any); ok {
					info = ti
				}
				created, err := time.Parse(time.RFC3339, info["created_at"].(string))
				if err != nil {
					t.Fatalf("%s: created_at %v", rec.create, info["created_at"])
				}
				got, _ := time.Parse(time.RFC3339, info["budget_reset_at"].(string))
				if want := tc.want(created.UTC()); !got.Equal(want) {
					t.Errorf("%s %s, created %v: budget_reset_at %v, want %v", rec.create, tc.dur, created, got, want)
				}
			}
		}
	})
}
