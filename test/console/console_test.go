package console

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsole signs in as the proxy admin and as internal users, on each
// store, in one browser.
func TestConsole(t *testing.T) {
	ctx := browser(t)
	for _, store := range stores() {
		t.Run(store, func(t *testing.T) {
			s := start(t, store)
			t.Run("admin", func(t *testing.T) { adminFlow(t, ctx, s, store == "memory") })
			t.Run("internal user", func(t *testing.T) { internalUserFlow(t, ctx, s) })
		})
	}
}

// adminFlow: the proxy admin signs in, sees every page of the nav, and
// the keys a script made.
func adminFlow(t *testing.T, ctx context.Context, s *stack, shots bool) {
	s.mustCall(t, "POST", "/key/generate", master, map[string]any{"key_alias": "made-by-script"}, nil)
	signIn(t, ctx, s.base, master)
	if got := text(t, ctx, "#who .role"); got != "proxy_admin" {
		t.Errorf("role shown %q, want proxy_admin", got)
	}
	if shots {
		screenshot(t, ctx, "home")
	}
	run(t, ctx, "open keys", chromedp.Click(chromedp.CSS(`nav#nav a[href="#/keys"]`)), visible(`.page-keys table`))
	if got := text(t, ctx, ".page-keys table"); !strings.Contains(got, "made-by-script") {
		t.Errorf("keys page lacks the key made by a script: %q", got)
	}
	if shots {
		screenshot(t, ctx, "keys")
	}
}

// internalUserFlow: an internal user sees its own keys only, and typing
// another user's filter into the URL shows the API's 403, not its keys.
func internalUserFlow(t *testing.T, ctx context.Context, s *stack) {
	var alice, bob struct{ Key string }
	s.mustCall(t, "POST", "/user/new", master, map[string]any{"user_id": "alice", "user_role": "internal_user", "auto_create_key": true, "key_alias": "alice-key"}, &alice)
	s.mustCall(t, "POST", "/user/new", master, map[string]any{"user_id": "bob", "user_role": "internal_user", "auto_create_key": true, "key_alias": "bob-key"}, &bob)
	signIn(t, ctx, s.base, alice.Key)
	if got := text(t, ctx, "#who .role"); got != "internal_user" {
		t.Errorf("role shown %q, want internal_user", got)
	}
	run(t, ctx, "open keys", chromedp.Navigate(s.base+"/ui/#/keys"), visible(`.page-keys table`))
	got := text(t, ctx, ".page-keys table")
	if !strings.Contains(got, "alice-key") || strings.Contains(got, "bob-key") {
		t.Errorf("alice's keys page: %q, want alice-key and not bob-key", got)
	}
	run(t, ctx, "type bob's URL", chromedp.Navigate(s.base+"/ui/#/keys?user_id=bob"), visible(`.page-keys .error-box`))
	page := text(t, ctx, ".page-keys")
	if !strings.Contains(page, "403") || strings.Contains(page, "bob-key") {
		t.Errorf("alice typing bob's keys URL: %q, want the API's 403 and no bob-key", page)
	}
}
