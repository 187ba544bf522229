package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsole drives the console in one browser, on each store: the proxy
// admin manages keys through the forms and the key works on the OpenAI
// API; internal users see only their own keys, whatever URL they type.
func TestConsole(t *testing.T) {
	ctx := browser(t)
	for _, store := range stores() {
		t.Run(store, func(t *testing.T) {
			s := start(t, store)
			shots := store == "memory"
			t.Run("admin keys", func(t *testing.T) { adminKeys(t, ctx, s, shots) })
			t.Run("internal user", func(t *testing.T) { internalUser(t, ctx, s) })
			t.Run("narrow screen", func(t *testing.T) { narrow(t, ctx, s, shots) })
			t.Run("paging", func(t *testing.T) { paging(t, ctx, s) })
		})
	}
}

// chat calls /v1/chat/completions with key (local mode's mock model) and
// returns the status.
func (s *stack) chat(t *testing.T, key string) int {
	t.Helper()
	return s.call(t, http.MethodPost, "/v1/chat/completions", key,
		map[string]any{"model": "gpt-4o-mini", "messages": []map[string]string{{"role": "user", "content": "hi"}}}, nil)
}

// fill types v into the control named name of the form under scope,
// replacing what it held.
func fill(scope, name, v string) chromedp.Action[chromedp.Void] {
	sel := scope + ` [name="` + name + `"]`
	return chromedp.Steps(js(`document.querySelector(`+strconv.Quote(sel)+`).value = ""`), chromedp.SendKeys(chromedp.CSS(sel), v))
}

// pick chooses the options of values in the select named name of the
// form under scope (a picker: the team, the models), as a click would.
func pick(scope, name string, values ...string) chromedp.Action[chromedp.Void] {
	vs, _ := json.Marshal(values)
	sel := scope + ` select[name="` + name + `"]`
	return js(`(() => { const s = document.querySelector(` + strconv.Quote(sel) + `); const vs = ` + string(vs) + `;
  for (const o of s.options) o.selected = vs.includes(o.value);
  s.dispatchEvent(new Event('change')); })()`)
}

// formKeySpend: the key made through the form calls the OpenAI API, and
// the spend page shows that key's spend on the chart's table and the
// request in the logs (the whole flow: form, API, chart, logs).
func formKeySpend(t *testing.T, ctx context.Context, s *stack, secret string) {
	id := s.chatCallID(t, secret, "gpt-4o-mini")
	s.waitLogged(t, id)
	openSpend(t, ctx, s, "by=key", `[data-test="spend-chart"] svg rect`)
	get(t, ctx, "find web-key's spend in the chart's table", chromedp.Poll[string](rowSpend("web-key"), chromedp.WithPollingTimeout(stepTimeout)))
	run(t, ctx, "search the logs by the request's id",
		chromedp.SetValue(chromedp.CSS(`form[data-test="log-search"] input[name="request_id"]`), id),
		chromedp.Click(chromedp.CSS(`form[data-test="log-search"] button[type="submit"]`)),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => {
  const rows = document.querySelectorAll('.page-spend [data-test="spend-logs"] tbody tr');
  return rows.length === 1 && rows[0].textContent.includes(%q);
})()`, id), chromedp.WithPollingTimeout(stepTimeout)))
}

// adminKeys: the proxy admin signs in, creates a key through the form
// (for a team made through the API), sees the secret once and uses it,
// gets the API's error next to the field for bad input, then edits,
// blocks, unblocks, regenerates and deletes it through the page.
func adminKeys(t *testing.T, ctx context.Context, s *stack, shots bool) {
	s.mustCall(t, http.MethodPost, "/team/new", master, map[string]any{"team_id": "team-web", "team_alias": "Web"}, nil)
	s.mustCall(t, http.MethodPost, "/key/generate", master, map[string]any{"key_alias": "made-by-script", "max_budget": 5}, nil)
	if shots {
		run(t, ctx, "sign-in page", chromedp.Navigate(s.base+"/ui/"), js(`sessionStorage.clear()`), chromedp.Reload(), visible(`input[name="key"]`))
		screenshot(t, ctx, "sign-in")
	}
	signIn(t, ctx, s.base, master)
	if got := text(t, ctx, "#who .role"); got != "proxy_admin" {
		t.Errorf("role shown %q, want proxy_admin", got)
	}
	if shots {
		screenshot(t, ctx, "home")
	}
	run(t, ctx, "open keys", chromedp.Click(chromedp.CSS(`nav#nav a[href="#/keys"]`)), visible(`#main[data-rendered="#/keys"]`))
	if got := text(t, ctx, ".page-keys table"); !strings.Contains(got, "made-by-script") {
		t.Errorf("keys page lacks the key made by a script: %q", got)
	}

	// Bad input: the API's error next to its field, the page still there.
	run(t, ctx, "bad create",
		chromedp.Click(chromedp.CSS(`details.create summary`)),
		visible(`details.create [name="key_alias"]`),
		fill("details.create", "key_alias", "web-key"),
		fill("details.create", "max_budget", "-5"),
		chromedp.Click(chromedp.CSS(`details.create button[type="submit"]`)),
		visible(`details.create [name="max_budget"][aria-invalid="true"]`))
	id := get(t, ctx, "max_budget's id", chromedp.AttributeValue(chromedp.CSS(`details.create [name="max_budget"]`), "id"))
	if msg := text(t, ctx, "#"+id.Value+"-err"); !strings.Contains(msg, "max_budget") || !strings.Contains(msg, ">= 0") {
		t.Errorf("error next to max_budget: %q, want the API's", msg)
	}
	if shots {
		screenshot(t, ctx, "keys-error")
	}
	run(t, ctx, "bad metadata",
		fill("details.create", "max_budget", "10"),
		fill("details.create", "metadata", "{not json"),
		chromedp.Click(chromedp.CSS(`details.create button[type="submit"]`)),
		visible(`details.create [name="metadata"][aria-invalid="true"]`))

	// Create through the form; the secret is shown once and works.
	run(t, ctx, "create",
		fill("details.create", "metadata", `{"owner": "web"}`),
		pick("details.create", "team_id", "team-web"), // the team picker, by alias ("Web")
		pick("details.create", "models", "gpt-4o-mini", "gpt-4o"),
		fill("details.create", "rpm_limit", "60"),
		fill("details.create", "budget_duration", "30d"),
		fill("details.create", "duration", "90d"),
		chromedp.Click(chromedp.CSS(`details.create button[type="submit"]`)),
		visible(`.shown input[data-secret]`))
	secret := get(t, ctx, "read the secret", chromedp.Value(chromedp.CSS(`.shown input[data-secret]`)))
	if !strings.HasPrefix(secret, "sk-") {
		t.Fatalf("secret shown: %q", secret)
	}
	if shots {
		screenshot(t, ctx, "keys-created")
	}
	if code := s.chat(t, secret); code != http.StatusOK {
		t.Fatalf("chat with the key made in the console: %d", code)
	}
	formKeySpend(t, ctx, s, secret)
	run(t, ctx, "back to keys", chromedp.Navigate(s.base+"/ui/#/keys"), visible(`#main[data-rendered="#/keys"]`))
	var info struct {
		Info struct {
			TeamID    string         `json:"team_id"`
			Models    []string       `json:"models"`
			MaxBudget float64        `json:"max_budget"`
			RPM       int64          `json:"rpm_limit"`
			Metadata  map[string]any `json:"metadata"`
			Expires   *string        `json:"expires"`
		} `json:"info"`
	}
	s.mustCall(t, http.MethodGet, "/key/info?key="+secret, master, nil, &info)
	if i := info.Info; i.TeamID != "team-web" || len(i.Models) != 2 || i.MaxBudget != 10 || i.RPM != 60 || i.Metadata["owner"] != "web" || i.Expires == nil {
		t.Errorf("key made by the form: %+v", i)
	}

	// Search by alias, edit, block, unblock, regenerate, delete.
	open(t, ctx, s.base, "#/keys?key_alias=web-key")
	if got := text(t, ctx, ".page-keys table tbody"); !strings.Contains(got, "web-key") || strings.Contains(got, "made-by-script") {
		t.Errorf("search by alias: %q", got)
	}
	if shots {
		screenshot(t, ctx, "keys")
	}
	run(t, ctx, "edit",
		chromedp.Click(chromedp.CSS(`.page-keys table tbody a.button`)),
		visible(`.edit [name="key_alias"]`))
	if shots {
		screenshot(t, ctx, "keys-edit")
	}
	run(t, ctx, "save", fill(".edit", "rpm_limit", "120"), chromedp.Click(chromedp.CSS(`.edit button[type="submit"]`)), visible(`#main[data-rendered="#/keys"]`))
	s.mustCall(t, http.MethodGet, "/key/info?key="+secret, master, nil, &info)
	if info.Info.RPM != 120 || info.Info.MaxBudget != 10 || info.Info.TeamID != "team-web" {
		t.Errorf("after the edit: %+v, want rpm 120 and the rest unchanged", info.Info)
	}
	action := func(label string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(js(`window.confirm = () => true`),
			chromedp.Click(chromedp.JSPath(`[...document.querySelectorAll('.page-keys tbody button')].find(b => b.textContent === '`+label+`')`)))
	}
	open(t, ctx, s.base, "#/keys?key_alias=web-key")
	run(t, ctx, "block", action("Block"), visible(`.page-keys .tag.bad`))
	if code := s.chat(t, secret); code == http.StatusOK {
		t.Errorf("chat with the key blocked in the console: %d", code)
	}
	run(t, ctx, "unblock", action("Unblock"), chromedp.WaitNotPresent(chromedp.CSS(`.page-keys .tag.bad`)))
	if code := s.chat(t, secret); code != http.StatusOK {
		t.Errorf("chat with the key unblocked in the console: %d", code)
	}
	run(t, ctx, "regenerate", action("Regenerate"), visible(`.shown input[data-secret]`))
	fresh := get(t, ctx, "read the new secret", chromedp.Value(chromedp.CSS(`.shown input[data-secret]`)))
	if fresh == secret || s.chat(t, fresh) != http.StatusOK || s.chat(t, secret) == http.StatusOK {
		t.Errorf("regenerate: the new secret must work and the old one not")
	}
	run(t, ctx, "delete", action("Delete"), visible(`.page-keys p.empty`))
	if code := s.chat(t, fresh); code == http.StatusOK {
		t.Errorf("chat with the key deleted in the console: %d", code)
	}
}

// internalUser: an internal user sees its own keys only; typing another
// user's filter into the URL, or another user's key's edit URL, shows
// the API's 403, not the keys.
func internalUser(t *testing.T, ctx context.Context, s *stack) {
	var alice, bob struct {
		Key   string `json:"key"`
		Token string `json:"token"`
	}
	s.mustCall(t, http.MethodPost, "/user/new", master, map[string]any{"user_id": "alice", "user_role": "internal_user", "auto_create_key": true, "key_alias": "alice-key"}, &alice)
	s.mustCall(t, http.MethodPost, "/user/new", master, map[string]any{"user_id": "bob", "user_role": "internal_user", "auto_create_key": true, "key_alias": "bob-key"}, &bob)
	signIn(t, ctx, s.base, alice.Key)
	if got := text(t, ctx, "#who .role"); got != "internal_user" {
		t.Errorf("role shown %q, want internal_user", got)
	}
	open(t, ctx, s.base, "#/keys")
	got := text(t, ctx, ".page-keys table")
	if !strings.Contains(got, "alice-key") || strings.Contains(got, "bob-key") {
		t.Errorf("alice's keys page: %q, want alice-key and not bob-key", got)
	}
	for _, u := range []string{"#/keys?user_id=bob", "#/keys?edit=" + bob.Token} {
		open(t, ctx, s.base, u)
		run(t, ctx, "wait for the refusal", visible(`.page-keys .error-box`))
		page := text(t, ctx, ".page-keys")
		if !strings.Contains(page, "403") || strings.Contains(page, "bob-key") {
			t.Errorf("alice typing %s: %q, want the API's 403 and no bob-key", u, page)
		}
	}
	// As a team admin she sees the team's keys, bob's among them, by
	// following the team's link.
	s.mustCall(t, http.MethodPost, "/team/new", master, map[string]any{"team_id": "team-ops",
		"members_with_roles": []map[string]string{{"user_id": "alice", "role": "admin"}, {"user_id": "bob", "role": "user"}}}, nil)
	s.mustCall(t, http.MethodPost, "/key/generate", master, map[string]any{"key_alias": "bob-ops", "user_id": "bob", "team_id": "team-ops"}, nil)
	signIn(t, ctx, s.base, alice.Key)
	open(t, ctx, s.base, "#/keys")
	run(t, ctx, "team link", chromedp.Click(chromedp.CSS(`.page-keys a[href="#/keys?team_id=team-ops"]`)), visible(`#main[data-rendered="#/keys?team_id=team-ops"]`))
	if got := text(t, ctx, ".page-keys table"); !strings.Contains(got, "bob-ops") || strings.Contains(got, "bob-key") {
		t.Errorf("alice's view of team-ops: %q, want bob-ops only", got)
	}

	// Her own key through the form: it is hers without saying so.
	open(t, ctx, s.base, "#/keys")
	run(t, ctx, "create own key",
		chromedp.Click(chromedp.CSS(`details.create summary`)),
		fill("details.create", "key_alias", "alice-second"),
		chromedp.Click(chromedp.CSS(`details.create button[type="submit"]`)),
		visible(`.shown input[data-secret]`))
	var list struct {
		Keys []struct {
			Alias string `json:"key_alias"`
		} `json:"keys"`
	}
	s.mustCall(t, http.MethodGet, "/key/list?user_id=alice&return_full_object=true", master, nil, &list)
	if len(list.Keys) != 2 {
		t.Errorf("alice's keys after she made one: %+v", list.Keys)
	}
}

// narrow: the keys page at 375 px wide shows each key as a card, with no
// horizontal scrolling of the page.
func narrow(t *testing.T, ctx context.Context, s *stack, shots bool) {
	signIn(t, ctx, s.base, master)
	run(t, ctx, "narrow", chromedp.EmulateViewport(375, 800))
	open(t, ctx, s.base, "#/keys")
	defer run(t, ctx, "wide again", chromedp.EmulateViewport(1280, 860))
	w := get(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if w > 375 {
		t.Errorf("at 375 px the page is %d px wide", w)
	}
	if shots {
		screenshot(t, ctx, "keys-narrow")
	}
}

// paging: a team's 21 keys on two pages of 20, the second reached by the
// pager, as /key/list pages them.
func paging(t *testing.T, ctx context.Context, s *stack) {
	s.mustCall(t, http.MethodPost, "/team/new", master, map[string]any{"team_id": "team-many"}, nil)
	for i := range 21 {
		s.mustCall(t, http.MethodPost, "/key/generate", master, map[string]any{"key_alias": "many-" + strconv.Itoa(i), "team_id": "team-many"}, nil)
	}
	signIn(t, ctx, s.base, master)
	open(t, ctx, s.base, "#/keys?team_id=team-many")
	if got := text(t, ctx, ".page-keys .pager"); !strings.Contains(got, "Page 1 of 2") {
		t.Errorf("pager: %q", got)
	}
	rows := get(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll('.page-keys tbody tr').length`))
	run(t, ctx, "next page",
		chromedp.Click(chromedp.JSPath(`[...document.querySelectorAll('.pager button')].find(b => b.textContent.startsWith('Next'))`)),
		visible(`#main[data-rendered="#/keys?team_id=team-many&page=2"]`))
	rows2 := get(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll('.page-keys tbody tr').length`))
	if rows != 20 || rows2 != 1 {
		t.Errorf("rows on pages 1 and 2: %d, %d; want 20, 1", rows, rows2)
	}
}
