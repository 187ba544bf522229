package console

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleRecords drives the teams, users, end users, organizations and
// budgets pages, on each store, in one browser: a proxy admin creates
// through the forms (bad input first: the API's error must show next to
// the field), and an internal user's typed URLs for other records show
// the API's 403.
func TestConsoleRecords(t *testing.T) {
	ctx := browser(t)
	for _, store := range stores() {
		t.Run(store, func(t *testing.T) {
			s := start(t, store)
			shots := store == "memory"
			var team, org string
			t.Run("users", func(t *testing.T) { usersFlow(t, ctx, s, shots) })
			t.Run("teams", func(t *testing.T) { team = teamsFlow(t, ctx, s, shots) })
			t.Run("end users", func(t *testing.T) { customersFlow(t, ctx, s, shots) })
			t.Run("budgets", func(t *testing.T) { budgetsFlow(t, ctx, s, shots) })
			t.Run("organizations", func(t *testing.T) { org = orgsFlow(t, ctx, s, team, shots) })
			t.Run("internal user", func(t *testing.T) { internalRecordsFlow(t, ctx, s, team, org) })
			t.Run("team admin", func(t *testing.T) { teamAdminFlow(t, ctx, s, team) })
		})
	}
}

// submitForm sets the named controls of the form sel (selects too) and submits
// it.
func submitForm(t *testing.T, ctx context.Context, form string, values map[string]string) {
	t.Helper()
	run(t, ctx, "wait for "+form, visible(form))
	for name, v := range values {
		run(t, ctx, "fill "+name, chromedp.SetValue(chromedp.CSS(fmt.Sprintf(`%s [name=%q]`, form, name)), v))
	}
	run(t, ctx, "submit "+form, chromedp.Click(chromedp.CSS(form+` button[type="submit"]`)))
}

// waitText waits until the first node sel matches is shown and its text
// holds want.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	q, _ := json.Marshal(sel)
	w, _ := json.Marshal(want)
	expr := fmt.Sprintf(`(() => { const n = document.querySelector(%s); return !!n && !n.closest('[hidden]') && n.textContent.includes(%s); })()`, q, w)
	get(t, ctx, fmt.Sprintf("wait for %q in %s", want, sel), chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(stepTimeout)))
}

// fieldError is the error slot of the control name in form.
func fieldError(form, name string) string {
	return fmt.Sprintf(`%s [name=%q] ~ .field-error`, form, name)
}

// badThenGood submits form with field set to bad, expects the API's error
// (holding want) next to that field, then submits it with good.
func badThenGood(t *testing.T, ctx context.Context, form string, values map[string]string, field, bad, want, good string) {
	t.Helper()
	values[field] = bad
	submitForm(t, ctx, form, values)
	waitText(t, ctx, fieldError(form, field), want)
	if inv := get(t, ctx, "aria-invalid", chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q).getAttribute('aria-invalid') === 'true'`, fmt.Sprintf(`%s [name=%q]`, form, field)))); !inv {
		t.Errorf("%s %s=%q: the control is not marked aria-invalid", form, field, bad)
	}
	submitForm(t, ctx, form, map[string]string{field: good})
}

// clickButton clicks the button labelled label in the table row that
// holds row.
func clickButton(t *testing.T, ctx context.Context, row, label string) {
	t.Helper()
	expr := fmt.Sprintf(`(() => { const tr = [...document.querySelectorAll('main tbody tr')].find((r) => r.textContent.includes(%q));
		const b = tr && [...tr.querySelectorAll('button')].find((b) => b.textContent === %q); if (!b) return false; b.click(); return true; })()`, row, label)
	get(t, ctx, fmt.Sprintf("click %s of %s", label, row), chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(stepTimeout)))
}

// openRoute types the console URL of route and waits for sel (reloading, so
// that the page renders afresh when the URL is the one shown).
func openRoute(t *testing.T, ctx context.Context, s *stack, route, sel string) {
	t.Helper()
	run(t, ctx, "open "+route, chromedp.Navigate(s.base+"/ui/#/"+route), chromedp.Reload(), visible(sel))
}

// usersFlow: a proxy admin creates user carol through the form.
func usersFlow(t *testing.T, ctx context.Context, s *stack, shots bool) {
	signIn(t, ctx, s.base, master)
	openRoute(t, ctx, s, "users", `form[data-test="new-user"]`)
	const f = `form[data-test="new-user"]`
	badThenGood(t, ctx, f, map[string]string{"user_id": "carol", "user_email": "carol@example.com", "user_role": "internal_user"},
		"max_budget", "abc", "max_budget: want a number of USD", "50")
	waitText(t, ctx, ".page-users .panel", "carol created")
	var info struct {
		UserInfo struct {
			MaxBudget *float64 `json:"max_budget"`
			Email     string   `json:"user_email"`
		} `json:"user_info"`
		Keys []any `json:"keys"`
	}
	s.mustCall(t, "GET", "/user/info?user_id=carol", master, nil, &info)
	if info.UserInfo.MaxBudget == nil || *info.UserInfo.MaxBudget != 50 || info.UserInfo.Email != "carol@example.com" || len(info.Keys) != 0 {
		t.Errorf("carol as stored: %+v, want max_budget 50, her email, no key (the box was not ticked)", info)
	}
	openRoute(t, ctx, s, "users", ".page-users table")
	waitText(t, ctx, ".page-users table", "carol@example.com")
	if shots {
		screenshot(t, ctx, "users")
	}
	openRoute(t, ctx, s, "user?user_id=carol", `form[data-test="edit-user"]`)
	submitForm(t, ctx, `form[data-test="edit-user"]`, map[string]string{"user_alias": "Carol C"})
	waitText(t, ctx, ".page-user dl", "Carol C")
	if shots {
		screenshot(t, ctx, "user")
	}
}

// teamsFlow: a proxy admin creates team platform and adds carol with a
// budget in the team, then changes her role and budget; it returns the
// team's id.
func teamsFlow(t *testing.T, ctx context.Context, s *stack, shots bool) string {
	signIn(t, ctx, s.base, master)
	openRoute(t, ctx, s, "teams", `form[data-test="new-team"]`)
	badThenGood(t, ctx, `form[data-test="new-team"]`, map[string]string{"team_alias": "platform", "models": "gpt-4o-mini"},
		"max_budget", "-5", "max_budget: want a number of USD >= 0", "100")
	waitText(t, ctx, ".page-team h1", "platform")
	team := get(t, ctx, "team id", chromedp.Evaluate[string](`new URLSearchParams(location.hash.split('?')[1]).get('team_id')`))
	if team == "" {
		t.Fatal("no team_id in the team page's URL")
	}
	const add = `form[data-test="member-add"]`
	badThenGood(t, ctx, add, map[string]string{"user_id": "carol", "role": "user"}, "max_budget_in_team", "abc", "max_budget_in_team: want a number of USD", "25")
	waitText(t, ctx, ".page-team table", "$25.00")
	var info struct {
		Memberships []struct {
			UserID string `json:"user_id"`
			Budget struct {
				MaxBudget *float64 `json:"max_budget"`
			} `json:"litellm_budget_table"`
		} `json:"team_memberships"`
		Team struct {
			MaxBudget *float64 `json:"max_budget"`
			Models    []string `json:"models"`
		} `json:"team_info"`
	}
	s.mustCall(t, "GET", "/team/info?team_id="+team, master, nil, &info)
	if len(info.Memberships) != 1 || info.Memberships[0].UserID != "carol" || info.Memberships[0].Budget.MaxBudget == nil || *info.Memberships[0].Budget.MaxBudget != 25 {
		t.Errorf("team memberships as stored: %+v, want carol with 25", info.Memberships)
	}
	if info.Team.MaxBudget == nil || *info.Team.MaxBudget != 100 || len(info.Team.Models) != 1 {
		t.Errorf("team as stored: %+v, want max_budget 100, models [gpt-4o-mini]", info.Team)
	}
	clickButton(t, ctx, "carol", "Edit")
	submitForm(t, ctx, `form[data-test="member-edit"]`, map[string]string{"role": "admin", "max_budget_in_team": "30"})
	waitText(t, ctx, ".page-team table", "$30.00")
	waitText(t, ctx, ".page-team table", "admin")
	run(t, ctx, "the team's keys link", visible(fmt.Sprintf(`.page-team a[href="#/keys?team_id=%s"]`, team)))
	if shots {
		screenshot(t, ctx, "team")
	}
	openRoute(t, ctx, s, "teams", ".page-teams table")
	waitText(t, ctx, ".page-teams table", "platform")
	if shots {
		screenshot(t, ctx, "teams")
	}
	return team
}

// customersFlow: a proxy admin creates an end user held to the EU, then
// blocks it.
func customersFlow(t *testing.T, ctx context.Context, s *stack, shots bool) {
	signIn(t, ctx, s.base, master)
	openRoute(t, ctx, s, "customers", `form[data-test="new-customer"]`)
	const f = `form[data-test="new-customer"]`
	badThenGood(t, ctx, f, map[string]string{"user_id": "cust-1", "alias": "Customer one", "allowed_model_region": "eu"},
		"max_budget", "-1", "max_budget: want a number of USD >= 0", "10")
	waitText(t, ctx, ".page-customers table", "cust-1")
	clickButton(t, ctx, "cust-1", "Block")
	waitText(t, ctx, ".page-customers table .tag.bad", "blocked")
	var e struct {
		Blocked bool   `json:"blocked"`
		Region  string `json:"allowed_model_region"`
		Budget  struct {
			MaxBudget *float64 `json:"max_budget"`
		} `json:"litellm_budget_table"`
	}
	s.mustCall(t, "GET", "/customer/info?end_user_id=cust-1", master, nil, &e)
	if !e.Blocked || e.Region != "eu" || e.Budget.MaxBudget == nil || *e.Budget.MaxBudget != 10 {
		t.Errorf("end user as stored: %+v, want blocked, eu, max_budget 10", e)
	}
	openRoute(t, ctx, s, "customers?edit=cust-1", `form[data-test="edit-customer"]`)
	submitForm(t, ctx, `form[data-test="edit-customer"]`, map[string]string{"allowed_model_region": "us"})
	waitText(t, ctx, ".page-customers table", "us")
	if shots {
		screenshot(t, ctx, "customers")
	}
}

// budgetsFlow: a proxy admin creates and edits a reusable budget, and
// links it to an end user.
func budgetsFlow(t *testing.T, ctx context.Context, s *stack, shots bool) {
	signIn(t, ctx, s.base, master)
	openRoute(t, ctx, s, "budgets", `form[data-test="new-budget"]`)
	badThenGood(t, ctx, `form[data-test="new-budget"]`, map[string]string{"budget_id": "gold", "budget_duration": "30d"},
		"max_budget", "abc", "max_budget: want a number of USD", "200")
	waitText(t, ctx, ".page-budgets table", "$200.00")
	openRoute(t, ctx, s, "budgets?edit=gold", `form[data-test="edit-budget"]`)
	submitForm(t, ctx, `form[data-test="edit-budget"]`, map[string]string{"max_budget": "250"})
	waitText(t, ctx, ".page-budgets table", "$250.00")
	if shots {
		screenshot(t, ctx, "budgets")
	}
	// An end user links it: a budget that does not exist is the API's
	// error next to budget_id; the list then shows the linked budget.
	openRoute(t, ctx, s, "customers?edit=cust-1", `form[data-test="edit-customer"]`)
	badThenGood(t, ctx, `form[data-test="edit-customer"]`, map[string]string{}, "budget_id", "nope", `no budget "nope"`, "gold")
	waitText(t, ctx, ".page-customers table", "$250.00")
}

// orgsFlow: a proxy admin creates an organization and adds carol as its
// org_admin with a budget in it, then moves the team into it through
// the team's form; it returns the organization's id.
func orgsFlow(t *testing.T, ctx context.Context, s *stack, team string, shots bool) string {
	signIn(t, ctx, s.base, master)
	openRoute(t, ctx, s, "organizations", `form[data-test="new-organization"]`)
	badThenGood(t, ctx, `form[data-test="new-organization"]`, map[string]string{"organization_alias": "acme"},
		"max_budget", "abc", "max_budget: want a number of USD", "500")
	waitText(t, ctx, ".page-organization h1", "acme")
	org := get(t, ctx, "organization id", chromedp.Evaluate[string](`new URLSearchParams(location.hash.split('?')[1]).get('organization_id')`))
	badThenGood(t, ctx, `form[data-test="org-member-add"]`, map[string]string{"user_id": "carol", "role": "org_admin"},
		"max_budget_in_organization", "-2", "want a number of USD >= 0", "5")
	waitText(t, ctx, ".page-organization table", "$5.00")
	waitText(t, ctx, ".page-organization table", "org_admin")
	openRoute(t, ctx, s, "team?team_id="+team, `form[data-test="edit-team"]`)
	submitForm(t, ctx, `form[data-test="edit-team"]`, map[string]string{"organization_id": org})
	waitText(t, ctx, ".page-team dl", org)
	openRoute(t, ctx, s, "organization?organization_id="+org, ".page-organization dl")
	waitText(t, ctx, ".page-organization dl", "platform")
	if shots {
		screenshot(t, ctx, "organization")
	}
	openRoute(t, ctx, s, "organizations", ".page-organizations table")
	waitText(t, ctx, ".page-organizations table", "acme")
	if shots {
		screenshot(t, ctx, "organizations")
	}
	return org
}

// internalRecordsFlow: an internal user may open its own user page, but
// typing another user's, the user and end user lists or a team it is not
// in shows the API's 403 and none of their data (and so do the budgets
// and an organization it is not in, when org is given).
func internalRecordsFlow(t *testing.T, ctx context.Context, s *stack, team, org string) {
	var dora struct{ Key string }
	s.mustCall(t, "POST", "/user/new", master, map[string]any{"user_id": "dora", "user_role": "internal_user", "auto_create_key": true}, &dora)
	signIn(t, ctx, s.base, dora.Key)
	if hidden := get(t, ctx, "nav", chromedp.Evaluate[bool](`!document.querySelector('nav#nav a[href="#/users"]') && !document.querySelector('nav#nav a[href="#/customers"]')`)); !hidden {
		t.Error("an internal user's nav links the users or end users page")
	}
	openRoute(t, ctx, s, "user?user_id=dora", ".page-user dl")
	waitText(t, ctx, ".page-user dl", "internal_user")
	cases := []struct{ route, page, secret string }{
		{"user?user_id=carol", "user", "carol@example.com"},
		{"users", "users", "carol@example.com"},
		{"customers", "customers", "cust-1"},
		{"team?team_id=" + team, "team", "carol"},
	}
	if org != "" {
		cases = append(cases, struct{ route, page, secret string }{"organization?organization_id=" + org, "organization", "carol"},
			struct{ route, page, secret string }{"budgets", "budgets", "gold"})
	}
	for _, c := range cases {
		sel := ".page-" + c.page
		openRoute(t, ctx, s, c.route, sel+" .error-box")
		got := text(t, ctx, sel)
		if !strings.Contains(got, "403") || strings.Contains(got, c.secret) {
			t.Errorf("dora typing #/%s: %q, want the API's 403 and no %q", c.route, got, c.secret)
		}
	}
	openRoute(t, ctx, s, "teams", ".page-teams .empty")
	if got := text(t, ctx, ".page-teams"); strings.Contains(got, "platform") {
		t.Errorf("dora's teams page: %q, want no team platform", got)
	}
}

// teamAdminFlow: carol, an internal user made admin of the team, manages
// its members (adds dora with a budget) but is offered no team edit, block
// or delete (a proxy admin's).
func teamAdminFlow(t *testing.T, ctx context.Context, s *stack, team string) {
	var carol struct{ Key string }
	s.mustCall(t, "POST", "/key/generate", master, map[string]any{"user_id": "carol", "key_alias": "carol-key"}, &carol)
	signIn(t, ctx, s.base, carol.Key)
	openRoute(t, ctx, s, "team?team_id="+team, `form[data-test="member-add"]`)
	if offered := get(t, ctx, "admin-only controls", chromedp.Evaluate[bool](`!!document.querySelector('form[data-test="edit-team"]') || [...document.querySelectorAll('.page-team button')].some((b) => b.textContent === 'Block')`)); offered {
		t.Error("a team admin is offered the team's edit form or block button (a proxy admin's)")
	}
	submitForm(t, ctx, `form[data-test="member-add"]`, map[string]string{"user_id": "dora", "max_budget_in_team": "5"})
	waitText(t, ctx, ".page-team table", "dora")
	waitText(t, ctx, ".page-team table", "$5.00")
}
